"""The one exception type of the API."""


class PreregError(Exception):
    """A failure of the prereg binary: its one error line and its documented exit code.

    `message` is the line as prereg printed it (`prereg: error: WHAT (WHERE)`), `what` and
    `where` its parts (`where` is "" when the line has none), `exit_code` one of docs/cli.md's
    codes: 1 internal or I/O failure, 2 usage or invalid input, 3 refused on integrity, 4 audit
    failed, 5 the environment cannot serve.
    """

    EXIT_MEANINGS = {
        1: "internal or I/O failure",
        2: "usage error or invalid input",
        3: "refused on integrity",
        4: "audit failed",
        5: "the environment cannot serve",
    }

    def __init__(self, message, exit_code, command=()):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.command = tuple(command)
        body = message[len("prereg: error: "):] if message.startswith("prereg: error: ") else message
        self.what, self.where = body, ""
        if body.endswith(")") and " (" in body:
            self.what, _, rest = body.rpartition(" (")
            self.where = rest[:-1]

    @property
    def meaning(self):
        """What the exit code means (docs/cli.md, "Exit codes")."""
        return self.EXIT_MEANINGS.get(self.exit_code, "unknown exit code")

    def __str__(self):
        return f"{self.message} [exit {self.exit_code}: {self.meaning}]"
