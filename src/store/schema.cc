#include "store/schema.h"

#include <array>

#include "keel/store.h"
#include "store/node_digest.h"

namespace keel {
namespace {

// Version 1: the data model of docs/architecture.md §4.
constexpr std::array<std::string_view, 22> kVersion1 = {
    // Threads: a tree of nodes; leaf_node_id is the selected branch's tip.
    R"(CREATE TABLE threads (
         id TEXT PRIMARY KEY,
         title TEXT NOT NULL,
         leaf_node_id TEXT,
         parent_thread_id TEXT,
         fork_node_id TEXT,
         revision BIGINT NOT NULL,
         next_node_seq BIGINT NOT NULL,
         created_at BIGINT NOT NULL,
         updated_at BIGINT NOT NULL,
         deleted INTEGER NOT NULL DEFAULT 0))",
    // Nodes: append-only. seq orders a thread's nodes by creation; parent_id may name a node of the
    // parent thread (a fork shares its history instead of copying it).
    R"(CREATE TABLE nodes (
         id TEXT PRIMARY KEY,
         thread_id TEXT NOT NULL,
         parent_id TEXT,
         kind TEXT NOT NULL,
         run_id TEXT,
         seq BIGINT NOT NULL,
         body TEXT NOT NULL,
         created_at BIGINT NOT NULL))",
    "CREATE UNIQUE INDEX nodes_by_thread_seq ON nodes (thread_id, seq)",
    "CREATE INDEX nodes_by_parent ON nodes (parent_id)",
    R"(CREATE TABLE runs (
         id TEXT PRIMARY KEY,
         thread_id TEXT NOT NULL,
         turn_id TEXT NOT NULL,
         turn_kind TEXT NOT NULL,
         state TEXT NOT NULL,
         snapshot_id TEXT,
         step_cursor BIGINT NOT NULL DEFAULT 0,
         pending_tool TEXT,
         revision BIGINT NOT NULL,
         stop_reason TEXT,
         provider_stop_reason TEXT,
         usage TEXT NOT NULL,
         budget_tokens BIGINT,
         failure_streak INTEGER NOT NULL DEFAULT 0,
         next_admission_seq BIGINT NOT NULL DEFAULT 1,
         error TEXT,
         created_at BIGINT NOT NULL,
         updated_at BIGINT NOT NULL))",
    "CREATE INDEX runs_by_thread ON runs (thread_id, created_at)",
    "CREATE INDEX runs_by_state ON runs (state)",
    R"(CREATE TABLE run_queue (
         id TEXT PRIMARY KEY,
         thread_id TEXT NOT NULL,
         position BIGINT NOT NULL,
         input TEXT NOT NULL,
         revision BIGINT NOT NULL,
         created_at BIGINT NOT NULL,
         updated_at BIGINT NOT NULL))",
    "CREATE INDEX run_queue_by_thread ON run_queue (thread_id, position)",
    R"(CREATE TABLE steers (
         id TEXT PRIMARY KEY,
         run_id TEXT NOT NULL,
         admission_seq BIGINT NOT NULL,
         input TEXT NOT NULL,
         attachments TEXT NOT NULL,
         state TEXT NOT NULL,
         node_id TEXT,
         created_at BIGINT NOT NULL,
         UNIQUE (run_id, admission_seq)))",
    R"(CREATE TABLE prepared_tool_calls (
         tool_call_id TEXT PRIMARY KEY,
         run_id TEXT NOT NULL,
         node_id TEXT,
         tool_name TEXT NOT NULL,
         descriptor_digest TEXT NOT NULL,
         params TEXT NOT NULL,
         target TEXT,
         dispatch_state TEXT NOT NULL,
         created_at BIGINT NOT NULL,
         updated_at BIGINT NOT NULL))",
    "CREATE INDEX prepared_tool_calls_by_run ON prepared_tool_calls (run_id, dispatch_state)",
    R"(CREATE TABLE approvals (
         id TEXT PRIMARY KEY,
         run_id TEXT NOT NULL,
         tool_call_id TEXT NOT NULL,
         request TEXT NOT NULL,
         decision TEXT,
         state TEXT NOT NULL,
         created_at BIGINT NOT NULL,
         decided_at BIGINT))",
    "CREATE INDEX approvals_by_run ON approvals (run_id, state)",
    R"(CREATE TABLE interactions (
         id TEXT PRIMARY KEY,
         run_id TEXT NOT NULL,
         kind TEXT NOT NULL,
         request TEXT NOT NULL,
         response TEXT,
         claim_state TEXT NOT NULL,
         due_at BIGINT,
         created_at BIGINT NOT NULL,
         updated_at BIGINT NOT NULL))",
    "CREATE INDEX interactions_by_run ON interactions (run_id, claim_state)",
    // Receipts keep the outcome of a command, never its payload (spec §5.1).
    R"(CREATE TABLE receipts (
         client_id TEXT NOT NULL,
         submission_id TEXT NOT NULL,
         command_type TEXT NOT NULL,
         fingerprint TEXT NOT NULL,
         outcome TEXT NOT NULL,
         created_at BIGINT NOT NULL,
         PRIMARY KEY (client_id, submission_id)))",
    R"(CREATE TABLE environment_snapshots (
         id TEXT PRIMARY KEY,
         version INTEGER NOT NULL,
         digest TEXT NOT NULL,
         body TEXT NOT NULL,
         created_at BIGINT NOT NULL))",
    R"(CREATE TABLE site_rules (
         id TEXT PRIMARY KEY,
         origin TEXT NOT NULL,
         tool TEXT,
         effects TEXT,
         decision TEXT NOT NULL,
         version BIGINT NOT NULL,
         created_at BIGINT NOT NULL,
         updated_at BIGINT NOT NULL))",
    R"(CREATE TABLE credentials (
         id TEXT PRIMARY KEY,
         shape TEXT NOT NULL,
         nonce BLOB NOT NULL,
         ciphertext BLOB NOT NULL,
         created_at BIGINT NOT NULL,
         rotated_at BIGINT NOT NULL))",
    R"(CREATE TABLE settings (
         key TEXT PRIMARY KEY,
         value TEXT NOT NULL,
         updated_at BIGINT NOT NULL))",
    "CREATE INDEX site_rules_by_origin ON site_rules (origin)",
};

// Version 2: credentials encrypted at rest (config/credential_vault.h). A credential records which provider
// kind it is for, which master key sealed it (a fingerprint), and a version that each rotation bumps.
// Version 1 wrote no credential rows; the defaults only keep the statements valid on a non-empty table.
constexpr std::array<std::string_view, 3> kVersion2 = {
    "ALTER TABLE credentials ADD COLUMN provider_kind TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE credentials ADD COLUMN key_id TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE credentials ADD COLUMN version BIGINT NOT NULL DEFAULT 1",
};

// Version 3: whether a thread's title was given by a person (thread.create, thread.fork with a title). The
// fallback and generated titles of a thread's first turn never replace a given one. Threads of version 2
// keep the automatic behaviour (0): their title may already be an automatic one.
constexpr std::array<std::string_view, 1> kVersion3 = {
    "ALTER TABLE threads ADD COLUMN title_given INTEGER NOT NULL DEFAULT 0",
};

// Version 4: remembered decisions are confined to what the person was shown (docs/policy.md, issue 15): a
// rule may hold on one thread, in one workspace folder, and for a lifetime (the rest of a turn, an engine
// session, or until revoked). Rules of version 3 hold everywhere until removed: NULL bounds, untilRevoked.
constexpr std::array<std::string_view, 5> kVersion4 = {
    "ALTER TABLE site_rules ADD COLUMN thread_id TEXT",
    "ALTER TABLE site_rules ADD COLUMN workspace TEXT",
    "ALTER TABLE site_rules ADD COLUMN lifetime TEXT NOT NULL DEFAULT 'untilRevoked'",
    "ALTER TABLE site_rules ADD COLUMN session_id TEXT",
    "ALTER TABLE site_rules ADD COLUMN turn_id TEXT",
};

// Version 5: a digest sealing each node (store/node_digest.h), verified whenever a node is read, so that a
// damaged node is refused (store.corrupt) instead of served. The program computes it for existing rows;
// the column stays nullable in the schema because SQLite cannot add a NOT NULL column without a default,
// but every row has one after this migration and a NULL is read as damage.
constexpr std::array<std::string_view, 1> kVersion5 = {
    "ALTER TABLE nodes ADD COLUMN digest TEXT",
};

// Version 6: the model a person chose for a thread (thread.setModel; a name of the engine's model catalogue).
// NULL, as every thread of version 5 has it, means the engine's default model.
constexpr std::array<std::string_view, 1> kVersion6 = {
    "ALTER TABLE threads ADD COLUMN model TEXT",
};

// Version 7: the MCP servers a thread enables (thread.setMcpServers): a JSON array of configured server
// names. NULL, as every thread of version 6 has it, means every enabled server.
constexpr std::array<std::string_view, 1> kVersion7 = {
    "ALTER TABLE threads ADD COLUMN mcp_servers TEXT",
};

constexpr std::array<Migration, 7> kMigrations = {
    Migration{1,
              "threads, nodes, runs, queue, steers, tool calls, approvals, interactions, receipts, "
              "snapshots, site rules, credentials, settings",
              kVersion1, nullptr},
    Migration{2, "credentials: provider kind, master key id, version", kVersion2, nullptr},
    Migration{3, "threads: title_given", kVersion3, nullptr},
    Migration{4, "site_rules: thread, workspace, lifetime (session, turn)", kVersion4, nullptr},
    Migration{5, "nodes: digest", kVersion5, &backfill_node_digests},
    Migration{6, "threads: model", kVersion6, nullptr},
    Migration{7, "threads: mcp_servers", kVersion7, nullptr},
};

}  // namespace

std::span<const Migration> schema_migrations() { return kMigrations; }

int current_schema_version() { return kMigrations.back().version; }

}  // namespace keel
