# What changed in a frozen Python file, for prereg's Python glue (docs/store.md, "Before a
# run"). Compiled into prereg as text after python_glue.py, in the same namespace
# (cmake/embed_text.cmake).

# --- what changed in a Python file since freezing (docs/store.md, "Before a run") --------------

def changed_functions(frozen_path, current_path):
    """JSON {"changed", "added", "removed": top-level function and class names, "module": whether
    code outside them changed}, comparing the two files' syntax trees (comments and formatting
    do not count); or "" when either does not parse. Neither file is imported or run."""
    import ast, json

    def parts(path):
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
        defs, rest = {}, []
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs[node.name] = ast.dump(node, include_attributes=False)
            else:
                rest.append(ast.dump(node, include_attributes=False))
        return defs, rest

    try:
        old, old_rest = parts(frozen_path)
        new, new_rest = parts(current_path)
    except Exception:
        return ""
    return json.dumps({
        "changed": sorted(n for n in old if n in new and old[n] != new[n]),
        "added": sorted(n for n in new if n not in old),
        "removed": sorted(n for n in old if n not in new),
        "module": old_rest != new_rest,
    })
