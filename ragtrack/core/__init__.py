"""The foundation every other package stands on: what a run is made of and the rules all code follows.

- `types`: the pydantic models passed between packages (cases, predictions, scores, manifests).
- `errors`: `InputError` (a user mistake: one line naming file, item and field) and friends.
- `hashing`: sha1/sha256 of files and canonical JSON.
- `registry`: named, versioned components (scorers, generators), their parameter models and code hashes.
- `cachedir`: where caches live (`$RAGTRACK_CACHE_DIR`).
- `redact`: secrets masked in anything logged.
- `termination`: signals as exceptions, so a killed run ends FAILED.
- `provenance`: the code and environment a run ran with.

May import: nothing of ragtrack but itself.
"""
