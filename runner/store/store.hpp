// The frozen-protocol store (docs/store.md): protocols/<hash>/, keys/, ledger.jsonl,
// and the integrity check `run` calls before touching any device.
#pragma once

#include "base/json.hpp"
#include "crypto/crypto.hpp"
#include "spec/protocol.hpp"
#include "store/ledger.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// A protocol as stored, verified on load.
struct frozen_protocol {
  std::string hash;
  std::string canonical;     ///< protocol.json bytes
  json body;                 ///< the normalised protocol
  protocol proto;            ///< rebuilt from body
  json freeze;               ///< the signed freeze record
  std::string source;        ///< source.yaml bytes
  std::string note;          ///< resolve_for_run: how a FILE that is not byte-identical matched
  std::filesystem::path dir; ///< the stored protocol's folder (protocols/<hash>/)
};

/// What changed in a Python file between the copy kept at freeze (`frozen`) and the file now:
/// {"changed", "added", "removed": top-level function and class names, "module": bool}, or
/// null when it cannot tell. The run layer's is run/source_changes.hpp (Python's `ast`, in a
/// child without the key); the store never runs Python itself.
using source_change_reader =
    std::function<json(const std::filesystem::path &frozen, const std::filesystem::path &now)>;

/// The kept copy of a Python file frozen with sha256 `digest` under a stored protocol's folder.
[[nodiscard]] std::filesystem::path kept_source_copy(const std::filesystem::path &protocol_dir,
                                                     const std::string &digest);

/// What freeze did.
struct freeze_outcome {
  std::string hash;
  bool already_frozen = false;
  bool cosmetic_only = false; ///< already frozen from other bytes (comments, formatting)
  /// Already frozen, but a kernel changed since (why that version cannot run, and what to do).
  std::optional<std::string> kernel_problem;
  /// The protocol was stored but the ledger had no freeze entry for it (a freeze killed between
  /// its files and its ledger line); the entry was appended now.
  bool repaired = false;
};

/// One frozen version of a protocol id.
struct frozen_version {
  std::string hash;
  std::string frozen_at;     ///< the freeze record's time stamp ("" if it has none)
  std::int64_t revision = 1; ///< the protocol's `revision` (absent from its JSON: 1)
};

/// "1a2b3c4d5e6f (revision 1, frozen 2026-...), ...": each version's hash prefix, revision and
/// freeze time.
[[nodiscard]] std::string versions_text(const std::vector<frozen_version> &versions);

/// The version `prereg run ID` runs among `versions` (one id's): the one of the highest
/// revision, or nullptr when several share it (a hash or a prefix must then choose).
[[nodiscard]] const frozen_version *newest_version(const std::vector<frozen_version> &versions);

/// Whether `s` is non-empty lowercase hex (a hash or a prefix of one).
[[nodiscard]] bool is_hex(std::string_view s);

/// The shortest hash prefix `resolve` accepts: shorter ones could silently name a protocol.
inline constexpr std::size_t min_prefix_digits = 8;

/// A store folder. Construction creates nothing; writes create what they need.
class store {
public:
  /// The ledger's appends verify the chain with this store's keys/ first.
  explicit store(std::filesystem::path root);

  /// --store, else $PREREG_STORE, else ./.prereg.
  [[nodiscard]] static std::filesystem::path default_root(const std::string &flag);

  [[nodiscard]] const std::filesystem::path &root() const noexcept { return m_root; }
  [[nodiscard]] std::filesystem::path protocol_dir(const std::string &hash) const;
  [[nodiscard]] std::filesystem::path lock_path() const { return m_root / "lock"; }
  /// The store's ledger. Handles share one cache per file (ledger.hpp), so a command reads and
  /// parses ledger.jsonl once and its own appends update what it has read.
  [[nodiscard]] ledger get_ledger() const { return m_ledger; }

  /// Validates nothing itself: stores `p` (already parsed from `source`), signs the freeze
  /// record, saves the public key and appends a freeze entry — all under the store lock.
  /// Refuses (exit 3) before writing anything if the ledger does not verify. Idempotent: a
  /// protocol already stored is reported as such and nothing is written, unless the ledger
  /// lacks its freeze entry, which is then appended (freeze_outcome::repaired).
  /// Outside arms' files (plugin, python) are resolved against `source_dir` (the protocol
  /// file's folder; empty: the current folder), hashed, and kept relative to project_root().
  freeze_outcome freeze(std::string_view source, const protocol &p, const signing_key &key,
                        const std::filesystem::path &source_dir = {}) const;
  /// The folder outside arms' files are kept relative to: the store's parent (docs/store.md).
  [[nodiscard]] std::filesystem::path project_root() const;

  /// Every stored hash, sorted.
  [[nodiscard]] std::vector<std::string> hashes() const;
  /// The frozen versions of the protocol `id`, oldest freeze first (a corrupted copy is left
  /// out: load() reports it when its hash is used).
  [[nodiscard]] std::vector<frozen_version> versions_of(std::string_view id) const;

  /// A full hash from a hash, a unique prefix of at least min_prefix_digits hex digits, or a
  /// protocol id: its one frozen version, or of several the one of the highest revision
  /// (newest_version), with `note` (when given) saying which and naming the others. Exit 2
  /// for a malformed, too short or ambiguous argument (an id whose highest revision is frozen
  /// in several versions), exit 3 for one that matches nothing in the store.
  [[nodiscard]] std::string resolve(std::string_view hash_or_prefix,
                                    std::string *note = nullptr) const;

  /// Loads and verifies a stored protocol: protocol.json must hash to its name, source.yaml
  /// must match the freeze record, and the freeze record's signature must verify with a key in
  /// the store (or in `extra_keys`). Any failure is exit 3.
  [[nodiscard]] frozen_protocol load(const std::string &hash) const;

  /// Saves a public key under keys/<fingerprint>.pub (idempotent).
  void add_key(const public_key &key) const;
  /// The public key with this fingerprint from keys/, verified to match its name.
  [[nodiscard]] std::optional<public_key> find_key(const std::string &fingerprint) const;

private:
  std::filesystem::path m_root;
  ledger m_ledger;
};

/// The integrity check `run` calls before any measurement (docs/store.md). `arg` is a
/// hash, a unique prefix or a protocol file. Refusals are exit 3 and say why: unknown hash,
/// corrupted stored copy, a file whose bytes match no freeze (cosmetic change, or which fields
/// changed and against which frozen hash), a kernel whose source hash changed since freezing.
/// Also refused: a ledger that does not verify with the store's keys, a frozen protocol whose
/// freeze the ledger does not record (repair with `prereg freeze FILE`), and a FILE that is the
/// signing key `key_path` or holds key material. An argument of lowercase hex only is always a
/// hash or prefix, never a file.
/// A changed Python arm file's message names the functions whose code changed when
/// `changes` is given and the store kept a copy of the frozen file (docs/store.md).
[[nodiscard]] frozen_protocol resolve_for_run(const store &s, std::string_view arg,
                                              const std::filesystem::path &key_path = {},
                                              const source_change_reader &changes = {});

/// True if `entries` hold a freeze entry of `hash`.
[[nodiscard]] bool ledger_records_freeze(std::span<const json> entries, std::string_view hash);

/// Throws exit 3 if a kernel named by the freeze record has another source hash in this build.
void check_kernel_sources(const frozen_protocol &fp, const std::filesystem::path &project,
                          const source_change_reader &changes = {});

/// The file an outside arm of `fp` runs, from its freeze record (relative to `project`).
[[nodiscard]] std::filesystem::path frozen_outside_file(const std::filesystem::path &project,
                                                        const frozen_protocol &fp,
                                                        const arm_spec &arm);

/// Why `fp` cannot run with this build's kernels (a kernel missing or changed since freezing,
/// with the way to a new version), or nothing. A changed outside file names every arm that
/// uses it and, for a Python file read by `changes` against its kept copy, the functions whose
/// code changed.
[[nodiscard]] std::optional<std::string>
kernel_source_problem(const frozen_protocol &fp, const std::filesystem::path &project,
                      const source_change_reader &changes = {});

/// What to do when a frozen version's kernel changed: the `revision` to set and freeze.
[[nodiscard]] std::string new_version_advice(const protocol &p);

/// The dotted paths of the JSON members that differ between `a` and `b` (sorted).
[[nodiscard]] std::vector<std::string> changed_fields(const json &a, const json &b);

} // namespace prereg
