// The append-only ledger (docs/ledger.md): one signed, hash-chained JSON line per event.
#pragma once

#include "base/json.hpp"
#include "crypto/crypto.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace prereg {

/// Ledger event names.
namespace ledger_event {
inline constexpr const char *freeze = "freeze";
inline constexpr const char *run_start = "run-start";
inline constexpr const char *run_complete = "run-complete";
inline constexpr const char *run_aborted = "run-aborted";
/// A protocol frozen elsewhere, verified and stored by `prereg import` (docs/scale-out.md).
inline constexpr const char *import = "import";
/// A merged report of shards or replications, written by `prereg merge` (docs/scale-out.md).
inline constexpr const char *merge = "merge";
/// A submission pinned to a task by `prereg submit` (docs/grading.md).
inline constexpr const char *submit = "submit";
/// A signed leaderboard written by `prereg grade` (docs/grading.md).
inline constexpr const char *grade = "grade";
} // namespace ledger_event

/// The SHA-256 `prev` of the first entry: 64 zeros.
inline const std::string ledger_genesis(64, '0');

/// The folder of this user's prereg caches that a key-holding process trusts,
/// ${XDG_CACHE_HOME:-$HOME/.cache}/prereg (its `verified/` holds the ledgers' verified-prefix
/// cache, docs/store.md); empty when neither variable names an absolute folder. The sandbox hides
/// it from outside code.
[[nodiscard]] std::filesystem::path verified_cache_folder();

/// Looks up a signer's public key by fingerprint (null if unknown).
using key_lookup = std::function<std::optional<public_key>(const std::string &fingerprint)>;

/// `ledger.jsonl`: each line is the JCS bytes of {seq, time, event, protocol_hash, prev, signer,
/// ..., signature}; `prev` is the SHA-256 hex of the previous line's bytes (without its newline).
///
/// A `ledger` is a handle: all handles on the same file in a process share one cache of its lines
/// and parsed entries, so a command reads and parses the file once. The cache is keyed by the
/// file's identity (device, inode, size, modification time); a read or an append that finds the
/// file changed by someone else reloads it. Callers hold the store's lock around append() and
/// around any read whose result decides what to append. Handles are for one thread at a time.
class ledger {
public:
  /// `append_keys` are the keys append() verifies the chain with before it writes, besides the
  /// appending key itself (empty: seq, chain and canonical form are checked, not signatures).
  explicit ledger(std::filesystem::path file, key_lookup append_keys = {});

  /// Appends `fields` (event, protocol_hash, and any extra members) as the next entry, adding
  /// seq, time, prev and signer and signing it. Writes exactly one line with one write() on a
  /// file opened O_APPEND, then fsyncs it (and its folder when the file is new); earlier bytes
  /// are never rewritten. On a failed write the file is cut back to its old length. Refuses
  /// (exit 3) to append to a ledger whose last line has no newline, or that does not verify
  /// with the append keys (verify(); only lines not verified before in this process are
  /// checked). Returns the entry.
  json append(json fields, const signing_key &key);

  /// Every entry, parsed strictly, in file order (no verification). The reference stays valid
  /// until the next append() to or reload of this file in this process: copy the vector to
  /// keep it across an append.
  [[nodiscard]] const std::vector<json> &entries() const;

  /// Checks seq order, the prev chain and every signature (keys from `keys`); throws `error`
  /// (exit 3) naming the first bad seq. Returns the number of entries. A prefix that this user's
  /// verified-prefix cache (outside the store) records as verified, byte for byte, with
  /// signers that `keys` all accept, is not checked again; the cache is updated after.
  std::size_t verify(const key_lookup &keys) const;

  /// verify() with the append keys (and `own`, the key about to append, whose entries it
  /// vouches for), incrementally: the lines already verified in this process (an unchanged
  /// prefix of the file) are not checked again. A handle made without append keys checks seq,
  /// chain and canonical form only.
  void verify_for_append(const signing_key *own = nullptr) const;

  /// The signers (fingerprints, first-use order) of every entry the last verification covered.
  [[nodiscard]] const std::vector<std::string> &last_signers() const;

  /// The last entry's seq and the SHA-256 hex of its line (0 and the genesis if empty).
  [[nodiscard]] std::pair<std::int64_t, std::string> head() const;
  /// The SHA-256 hex of line `seq` (1-based), or nullopt if the ledger is shorter.
  [[nodiscard]] std::optional<std::string> line_hash(std::int64_t seq) const;

  [[nodiscard]] const std::filesystem::path &path() const noexcept { return m_file; }

  struct cache; ///< the lines and entries read (ledger.cpp)

private:
  std::filesystem::path m_file;
  key_lookup m_append_keys;
  std::shared_ptr<cache> m_cache;
  /// The cache, reloaded if the file is not the one it was read from.
  cache &current() const;
};

/// A signed checkpoint of the ledger's head, to publish or commit outside the store:
/// {"checkpoint": "prereg-ledger-head", "seq", "head" (SHA-256 hex of line seq), "time",
/// "signer", "signature"} (docs/store.md, checkpoints). Refuses (exit 3) an empty ledger or one
/// that does not verify with the append keys.
[[nodiscard]] json make_checkpoint(const ledger &l, const signing_key &key);

/// Throws exit 3 unless `checkpoint` is a checkpoint signed by a key that `keys` accept and the
/// ledger still holds line `seq` with the recorded hash (a cut or rewritten ledger fails).
/// `where` names the checkpoint file. Returns its seq.
std::int64_t check_checkpoint(const ledger &l, const json &checkpoint, const key_lookup &keys,
                              const std::string &where);

/// The number of run-start entries of `protocol_hash` in `entries`: the attempts made so far.
/// The attempt number of the run whose run-start is entries[i] is
/// attempts_of(entries.first(i + 1), hash); the next run gets next_attempt().
[[nodiscard]] std::int64_t attempts_of(std::span<const json> entries,
                                       std::string_view protocol_hash);

/// attempts_of(entries, protocol_hash) + 1.
[[nodiscard]] std::int64_t next_attempt(std::span<const json> entries,
                                        std::string_view protocol_hash);

/// In one pass, for each entry: attempts_of(entries.first(i + 1), protocol_hash) if entry i is a
/// run-start of `protocol_hash` (its attempt number), else 0.
[[nodiscard]] std::vector<std::int64_t> attempt_numbers(std::span<const json> entries,
                                                        std::string_view protocol_hash);

} // namespace prereg
