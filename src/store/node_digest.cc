// store/node_digest.cc — sealing node rows with a SHA-256 digest and checking it on read.
#include "store/node_digest.h"

#include <string>
#include <variant>
#include <vector>

#include "keel/error_codes.h"
#include "util/overloaded.h"
#include "util/sha256.h"

namespace keel {
namespace {

// Rows per batch of the back-fill: bounds its memory (a body may hold up to 4 MiB).
constexpr int64_t kBackfillBatch = 64;

// Appends one value framed as <type tag><length>:<bytes> (NULL: the tag alone).
void frame(std::string& out, const SqlValue& value) {
  std::visit(Overloaded{[&](std::monostate) { out += 'N'; },
                        [&](int64_t v) {
                          out += 'I';
                          out += std::to_string(v);
                          out += ';';
                        },
                        [&](double v) {
                          out += 'R';
                          out += std::to_string(v);
                          out += ';';
                        },
                        [&](const std::string& v) {
                          out += 'T';
                          out += std::to_string(v.size());
                          out += ':';
                          out += v;
                        },
                        [&](const Blob& v) {
                          out += 'B';
                          out += std::to_string(v.bytes.size());
                          out += ':';
                          out += v.bytes;
                        }},
             value.storage());
}

}  // namespace

std::string node_digest(std::span<const SqlValue> values) {
  size_t size = 16;
  for (size_t i = 0; i < kNodeDigestedColumnCount; ++i) {
    if (const auto* text = std::get_if<std::string>(&values[i].storage())) size += text->size() + 24;
  }
  std::string framed;
  framed.reserve(size);
  framed += "keel-node-v1\n";
  for (size_t i = 0; i < kNodeDigestedColumnCount; ++i) frame(framed, values[i]);
  return sha256_hex(framed);
}

Result<void> verify_node_row(const SqlRow& row, std::string_view expected_id,
                             std::string_view expected_thread) {
  if (row.size() <= kNodeDigestedColumnCount) {
    return fail(codes::kInternal, "a node row was read without its digest column");
  }
  std::vector<SqlValue> values;
  values.reserve(kNodeDigestedColumnCount);
  for (size_t i = 0; i < kNodeDigestedColumnCount; ++i) values.push_back(row[i]);
  const std::string id = row.text(0);
  const SqlValue& stored = row[kNodeDigestedColumnCount];
  if (!std::holds_alternative<std::string>(stored.storage()) || stored.as_text() != node_digest(values)) {
    return fail(codes::kStoreCorrupt,
                "node " + id + " does not match its digest" + std::string(kNodeRecovery));
  }
  if (!expected_id.empty() && id != expected_id) {
    return fail(codes::kStoreCorrupt, "looking up node " + std::string(expected_id) + " found node " + id +
                                          " (a damaged index)" + std::string(kNodeRecovery));
  }
  if (!expected_thread.empty() && row.text(1) != expected_thread) {
    return fail(codes::kStoreCorrupt, "listing thread " + std::string(expected_thread) + " found node " + id +
                                          " of thread " + row.text(1) + " (a damaged index)" +
                                          std::string(kNodeRecovery));
  }
  return {};
}

Result<void> backfill_node_digests(MigrationSql& sql) {
  const std::string select = "SELECT " + std::string(kNodeDigestColumns) +
                             " FROM nodes WHERE digest IS NULL LIMIT " + std::to_string(kBackfillBatch);
  for (;;) {
    const std::vector<SqlRow> rows = KEEL_TRY(sql.query(select, {}));
    if (rows.empty()) return {};
    for (const SqlRow& row : rows) {
      std::vector<SqlValue> values;
      for (size_t i = 0; i < kNodeDigestedColumnCount; ++i) values.push_back(row[i]);
      const SqlValue params[] = {SqlValue(node_digest(values)), row[0]};
      // A row the update cannot find again would be selected forever: damage, refused.
      if (KEEL_TRY(sql.execute("UPDATE nodes SET digest = ? WHERE id = ?", params)) != 1) {
        return fail(codes::kStoreCorrupt,
                    "node " + row.text(0) + " cannot be given its digest" + std::string(kNodeRecovery));
      }
    }
  }
}

}  // namespace keel
