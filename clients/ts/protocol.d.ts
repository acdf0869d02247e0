/* Generated from docs/protocol/keel-protocol-v1.schema.json (protocol version 1)
 * by clients/ts/generate.mjs with json-schema-to-typescript. Do not edit: change the schema and run
 * `npm run generate` in clients/ts (scripts/test.sh fails while this file is stale). */

/**
 * A JSON-RPC request id.
 *
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "id".
 */
export type Id = string | number | null;
/**
 * @minItems 1
 * @maxItems 64
 *
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "batch".
 */
export type Batch = [Request, ...Request[]];
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "serverMessage".
 */
export type ServerMessage =
  | ResultResponse
  | ErrorResponse
  | EventNotification
  | DisconnectNotification
  | [ResultResponse | ErrorResponse, ...(ResultResponse | ErrorResponse)[]];
/**
 * Every error code this protocol version sends (docs/protocol.md, "Error codes"). Codes are stable; a client treats one it does not know as a generic failure.
 *
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "errorCode".
 */
export type ErrorCode =
  | "approval.decision_not_offered"
  | "approval.expired"
  | "approval.not_found"
  | "approval.thread_mismatch"
  | "attachment.not_found"
  | "browser.attach_failed"
  | "browser.bad_script_result"
  | "browser.cdp_error"
  | "browser.cdp_timeout"
  | "browser.crashed"
  | "browser.disconnected"
  | "browser.element_covered"
  | "browser.launch_failed"
  | "browser.modal_open"
  | "browser.navigation_failed"
  | "browser.navigation_refused"
  | "browser.no_modal"
  | "browser.no_such_tab"
  | "browser.not_actionable"
  | "browser.stale_ref"
  | "browser.state_file_damaged"
  | "browser.state_file_io"
  | "browser.state_file_unsafe"
  | "browser.tab_crashed"
  | "browser.taken_over"
  | "browser.target_changed"
  | "browser.target_closed"
  | "browser.unknown_key"
  | "browser.unknown_ref"
  | "browser.upload_outside_workspace"
  | "browser.wrong_tab"
  | "cancelled"
  | "chat.no_terminal"
  | "client.no_answer"
  | "command.submission_conflict"
  | "config.bad_value"
  | "config.missing_reference"
  | "config.missing_value"
  | "config.not_utf8"
  | "config.parse"
  | "config.read_failed"
  | "config.too_large"
  | "config.unknown_key"
  | "context.compaction_failed"
  | "context.stale"
  | "context.window_exceeded"
  | "credential.bad_id"
  | "credential.bad_secret"
  | "credential.bad_shape"
  | "credential.crypto_unavailable"
  | "credential.env_missing"
  | "credential.exists"
  | "credential.key_file_io"
  | "credential.key_file_permissions"
  | "credential.key_file_size"
  | "credential.key_file_unsafe"
  | "credential.not_found"
  | "credential.tampered"
  | "credential.wrong_master_key"
  | "demo.dir_failed"
  | "demo.dir_not_empty"
  | "demo.files_missing"
  | "demo.no_result"
  | "engine.shutting_down"
  | "environment.drift"
  | "failpoint.triggered"
  | "host.no_model"
  | "host.store_in_use"
  | "input.image_unsupported"
  | "input.invalid"
  | "interaction.already_claimed"
  | "interaction.expired"
  | "interaction.not_answered"
  | "interaction.not_found"
  | "interaction.thread_mismatch"
  | "internal"
  | "invalid_argument"
  | "invalid_command"
  | "json.invalid_utf8"
  | "json.non_finite_number"
  | "json.parse"
  | "json.too_deep"
  | "log.open_failed"
  | "mcp.auth_bad_challenge"
  | "mcp.auth_bad_metadata"
  | "mcp.auth_bad_url"
  | "mcp.auth_denied"
  | "mcp.auth_issuer_mismatch"
  | "mcp.auth_pkce_unsupported"
  | "mcp.auth_resource_mismatch"
  | "mcp.auth_state_mismatch"
  | "mcp.auth_token_failed"
  | "mcp.bad_response"
  | "mcp.bad_tool_result"
  | "mcp.call_refused"
  | "mcp.call_timed_out"
  | "mcp.connect_timed_out"
  | "mcp.duplicate_id"
  | "mcp.handshake_timed_out"
  | "mcp.http_bad_content_type"
  | "mcp.http_busy"
  | "mcp.http_status"
  | "mcp.http_stream_ended"
  | "mcp.http_unauthorized"
  | "mcp.http_unreachable"
  | "mcp.message_too_large"
  | "mcp.output_schema_mismatch"
  | "mcp.result_too_large"
  | "mcp.rpc_error"
  | "mcp.schema_remote_ref"
  | "mcp.schema_unusable"
  | "mcp.server_exited"
  | "mcp.server_log"
  | "mcp.server_unavailable"
  | "mcp.session_expired"
  | "mcp.spawn_failed"
  | "mcp.sse_bad_event"
  | "mcp.stray_output"
  | "mcp.too_many_calls"
  | "mcp.too_many_tools"
  | "mcp.tool_error"
  | "mcp.tool_name_conflict"
  | "mcp.transport_closed"
  | "mcp.unexpected_response"
  | "mcp.version_unsupported"
  | "model.unknown"
  | "model_server.bad_script"
  | "model_server.listen_failed"
  | "model_server.record_failed"
  | "node.not_a_leaf"
  | "node.not_found"
  | "node.not_in_thread"
  | "policy.bad_mode"
  | "policy.bad_origin"
  | "policy.bad_rule"
  | "policy.no_site"
  | "policy.rule_not_found"
  | "policy.unsupported"
  | "provider.bad_event_json"
  | "provider.bad_request"
  | "provider.connect_failed"
  | "provider.connection_lost"
  | "provider.context_too_long"
  | "provider.error"
  | "provider.event_too_large"
  | "provider.forbidden"
  | "provider.http_failed"
  | "provider.idle_timeout"
  | "provider.image_unsupported"
  | "provider.not_found"
  | "provider.not_sse"
  | "provider.overloaded"
  | "provider.protocol_error"
  | "provider.proxy_failed"
  | "provider.quota_exceeded"
  | "provider.rate_limited"
  | "provider.refused"
  | "provider.reply_too_large"
  | "provider.request_too_large"
  | "provider.reserved_parameter"
  | "provider.server_error"
  | "provider.stream_truncated"
  | "provider.timeout"
  | "provider.tls_failed"
  | "provider.tools_unsupported"
  | "provider.unauthorized"
  | "provider.unknown_event"
  | "queue.empty"
  | "queue.full"
  | "queue.item_not_found"
  | "revision.conflict"
  | "rpc.batch_too_large"
  | "rpc.body_refused"
  | "rpc.client_too_slow"
  | "rpc.header_too_large"
  | "rpc.host_refused"
  | "rpc.invalid_params"
  | "rpc.invalid_request"
  | "rpc.listen_failed"
  | "rpc.listen_not_loopback"
  | "rpc.message_too_large"
  | "rpc.method_not_found"
  | "rpc.origin_refused"
  | "rpc.parse_error"
  | "rpc.too_many_unauthenticated"
  | "rpc.unauthorized"
  | "run.invalid_transition"
  | "run.not_found"
  | "run.not_resumable"
  | "run.not_steerable"
  | "run.not_uncertain"
  | "run.uncertain"
  | "serve.token_file"
  | "serve.token_file_permissions"
  | "serve.token_file_unsafe"
  | "skill.bad_front_matter"
  | "skill.bad_name"
  | "skill.binary_file"
  | "skill.changed"
  | "skill.file_not_found"
  | "skill.io_error"
  | "skill.missing_field"
  | "skill.missing_skill_md"
  | "skill.not_found"
  | "skill.path_outside"
  | "skill.too_large"
  | "skill.too_many"
  | "snapshot.digest_mismatch"
  | "snapshot.entry_too_large"
  | "snapshot.not_found"
  | "snapshot.too_deep"
  | "snapshot.too_large"
  | "snapshot.too_many_tools"
  | "snapshot.version_unsupported"
  | "steer.already_materialized"
  | "steer.id_conflict"
  | "steer.not_found"
  | "steer.turn_mismatch"
  | "store.busy"
  | "store.constraint"
  | "store.corrupt"
  | "store.decode_failed"
  | "store.disk_full"
  | "store.foreign_database"
  | "store.io_error"
  | "store.migration_failed"
  | "store.nested_transaction"
  | "store.not_private"
  | "store.open_failed"
  | "store.payload_too_large"
  | "store.poisoned"
  | "store.read_only"
  | "store.schema_too_new"
  | "store.sql_error"
  | "store.transaction_closed"
  | "store.write_in_read_transaction"
  | "takeover.unknown_target"
  | "thread.busy"
  | "thread.deleted"
  | "thread.not_found"
  | "thread.waiting"
  | "tool.arguments_not_json"
  | "tool.arguments_too_large"
  | "tool.duplicate"
  | "tool.failed"
  | "tool.invalid_regex"
  | "tool.not_found"
  | "tool.not_retried"
  | "tool.timed_out"
  | "tool.unknown"
  | "tool_call.invalid_transition"
  | "tool_call.not_found"
  | "turn.busy"
  | "turn.ended"
  | "turn.interrupt_not_persisted"
  | "turn.tools_disabled"
  | "turn.unpersisted"
  | "workspace.binary_file"
  | "workspace.edit_ambiguous"
  | "workspace.edit_no_match"
  | "workspace.io_error"
  | "workspace.not_a_file"
  | "workspace.not_found"
  | "workspace.path_outside"
  | "workspace.too_large";
/**
 * An AgentEvent (docs/protocol.md, Events). Events of one thread carry a strictly increasing seq, also across engine restarts (not contiguous: a restart jumps to a higher range).
 *
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event".
 */
export type Event = {
  type:
    | "turn.start"
    | "item.start"
    | "item.delta"
    | "item.complete"
    | "token.usage"
    | "run.updated"
    | "thread.updated"
    | "queue.updated"
    | "approval.request"
    | "approval.resolved"
    | "interaction.request"
    | "interaction.resolved"
    | "policy.updated"
    | "run.uncertain"
    | "takeover.updated"
    | "turn.complete";
  threadId: string;
  seq: number;
  payload: {};
};
/**
 * A turn input: a string, content blocks, or {content}.
 *
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "input".
 */
export type Input = string | unknown[] | {};

/**
 * Every message between a client and `keel serve` (stdio or WebSocket). Client messages: definitions/request (params per method: definitions/params.<method>). Server messages: definitions/serverMessage; a response's result per method: definitions/result.<method>; an event's payload per type: definitions/event.<type>. docs/protocol.md explains each. The version is the `protocolVersion` initialize returns.
 */
export interface KeelProtocol {
  message?: Request | Batch | ServerMessage;
}
/**
 * A client request (or, without id, a notification: no answer is sent).
 *
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "request".
 */
export interface Request {
  jsonrpc: "2.0";
  id?: Id;
  method: string;
  params?: {};
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "resultResponse".
 */
export interface ResultResponse {
  jsonrpc: "2.0";
  id: Id;
  result: unknown;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "errorResponse".
 */
export interface ErrorResponse {
  jsonrpc: "2.0";
  id: Id;
  error: {
    /**
     * -32700 parse error, -32600 invalid request (also rpc.message_too_large, rpc.batch_too_large), -32601 method not found, -32602 invalid params (also the engine's invalid_argument / input.invalid), -32000 any other refusal of the engine
     */
    code: number;
    message: string;
    data: {
      code: ErrorCode;
      submissionId?: string;
      method?: string;
      maxBytes?: number;
      maxBatch?: number;
      maxDepth?: number;
    };
  };
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "eventNotification".
 */
export interface EventNotification {
  jsonrpc: "2.0";
  method: "event";
  params: Event;
}
/**
 * Sent once, just before the server closes the connection.
 *
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "disconnectNotification".
 */
export interface DisconnectNotification {
  jsonrpc: "2.0";
  method: "disconnect";
  params: {
    code: "rpc.client_too_slow";
    message: string;
  };
}
/**
 * Every op's params may carry clientId (a name inside the connection's principal: the op is recorded under `<principal>/<clientId>`, or the principal alone without it; principals: `stdio-1`, `ws:owner`, `ws:<name>`, `ws:anonymous`) and submissionId (required for receipted ops; for the others the JSON-RPC id serves). A member whose value is null and which the method does not require is absent.
 *
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "identity".
 */
export interface Identity {
  clientId?: string;
  submissionId?: string;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "keelError".
 */
export interface KeelError {
  code: ErrorCode;
  message: string;
}
export interface ParamsInitialize {
  subscribe?: boolean;
}
export interface ParamsThreadCreate {
  title?: string;
  /**
   * a name model.list lists (model.unknown otherwise); absent: the default model
   */
  model?: string;
}
export interface ParamsThreadDelete {
  threadId: string;
}
export interface ParamsThreadFork {
  threadId: string;
  atNodeId?: string;
  title?: string;
}
export interface ParamsThreadSelectBranch {
  threadId: string;
  leafNodeId: string;
  expectedRevision?: number;
}
export interface ParamsThreadSetModel {
  threadId: string;
  /**
   * a name model.list lists (model.unknown otherwise)
   */
  model: string;
  expectedRevision?: number;
}
export interface ParamsThreadSetMcpServers {
  threadId: string;
  /**
   * names of configured MCP servers ([mcp.servers.NAME]) whose tools the thread's next turns may use; absent or null: every enabled server; []: none
   *
   * @maxItems 64
   */
  servers?: string[] | null;
  expectedRevision?: number;
}
export interface ParamsThreadList {}
export interface ParamsThreadRead {
  threadId: string;
}
export interface ParamsThreadBranches {
  threadId: string;
}
export interface ParamsModelList {}
export interface ParamsTurnSubmit {
  threadId: string;
  input: Input;
  budgetTokens?: number;
  /**
   * start a new branch: the turn goes under this node instead of the thread's leaf, and the thread's leaf moves to it; the node must be where a turn may start (one an earlier turn follows, or a leaf of the thread); "" is the root: the turn starts from an empty history
   */
  parentNodeId?: string;
}
export interface ParamsTurnInterrupt {
  threadId: string;
  turnId?: string;
}
export interface ParamsTurnSteer {
  threadId: string;
  expectedTurnId: string;
  input: Input;
  /**
   * Items: {nodeId} or {runId}: one existing node or run
   */
  attachments?: {
    nodeId?: string;
    runId?: string;
  }[];
}
export interface ParamsTurnInput {
  threadId: string;
  input: Input;
  /**
   * Items: {nodeId} or {runId}: one existing node or run
   */
  attachments?: {
    nodeId?: string;
    runId?: string;
  }[];
}
export interface ParamsTurnEnqueue {
  threadId: string;
  input: Input;
}
export interface ParamsQueueStart {
  threadId: string;
}
export interface ParamsQueueUpdate {
  threadId: string;
  itemId: string;
  input: Input;
  expectedRevision?: number;
}
export interface ParamsQueueRemove {
  threadId: string;
  itemId: string;
}
export interface ParamsQueueList {
  threadId: string;
}
export interface ParamsRunResume {
  threadId: string;
  runId?: string;
  additionalBudgetTokens?: number;
}
export interface ParamsRunResolveUncertain {
  threadId: string;
  runId?: string;
  resolution: "retry" | "mark_done" | "fail";
}
export interface ParamsApprovalResponse {
  threadId: string;
  approvalId: string;
  decision: "accept" | "acceptForSite" | "decline";
  reason?: string;
  /**
   * acceptForSite only: how long the remembered decision holds (default: session)
   */
  remember?: "turn" | "session" | "untilRevoked";
}
export interface ParamsInteractionResponse {
  threadId: string;
  interactionId: string;
  response: unknown;
}
export interface ParamsPolicyRead {}
export interface ParamsPolicySetMode {
  threadId?: string;
  mode: "ask_every_write" | "ask_writes" | "read_only" | "allow_all";
}
export interface ParamsPolicyAddRule {
  scope: string;
  tool?: string;
  effects?: "read" | "write";
  decision: "allow" | "ask" | "deny";
}
export interface ParamsPolicyRemoveRule {
  ruleId: string;
}
export interface ParamsPolicySetHostPermissions {
  patterns: string[];
}
export interface ParamsTakeoverStart {
  threadId: string;
  /**
   * what to take over, by name: one of initialize's takeover.targets ("browser")
   */
  target: string;
}
export interface ParamsTakeoverEnd {
  threadId: string;
  /**
   * what to take over, by name: one of initialize's takeover.targets ("browser")
   */
  target: string;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "params.session.subscribe".
 */
export interface ParamsSessionSubscribe {
  threadIds?: string[];
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "params.session.unsubscribe".
 */
export interface ParamsSessionUnsubscribe {
  threadIds: string[];
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.initialize".
 */
export interface ResultInitialize {
  protocolVersion: 1;
  unfinished: {
    threadId: string;
    runId: string;
    turnId: string;
    state: string;
    canContinue: boolean;
    /**
     * waiting_approval: the open approvals' ids
     */
    pendingApprovals?: string[];
    /**
     * waiting_interaction: the open interactions
     */
    pendingInteractions?: {
      interactionId: string;
      kind: string;
    }[];
  }[];
  /**
   * only when keel has something a person can take over (docs/protocol.md, Taking over)
   */
  takeover?: {
    targets: {
      name: string;
      /**
       * the target's own report of what it holds
       */
      state: {
        [k: string]: unknown;
      };
    }[];
    /**
     * what a person holds now, per thread
     */
    held: {
      threadId: string;
      target: string;
    }[];
  };
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.thread.create".
 */
export interface ResultThreadCreate {
  threadId: string;
  revision: number;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.thread.delete".
 */
export interface ResultThreadDelete {
  threadId: string;
  revision: number;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.thread.fork".
 */
export interface ResultThreadFork {
  threadId: string;
  parentThreadId: string;
  revision: number;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.thread.selectBranch".
 */
export interface ResultThreadSelectBranch {
  threadId: string;
  leafNodeId: string;
  revision: number;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.thread.setModel".
 */
export interface ResultThreadSetModel {
  threadId: string;
  model: string;
  revision: number;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.thread.setMcpServers".
 */
export interface ResultThreadSetMcpServers {
  threadId: string;
  /**
   * the servers chosen, sorted, each once; null: every enabled server
   */
  mcpServers: string[] | null;
  revision: number;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.thread.list".
 */
export interface ResultThreadList {
  threads: {
    threadId: string;
    title?: string | null;
    revision: number;
    /**
     * the model the thread chose (thread.setModel); null: the default model
     */
    model?: string | null;
    /**
     * the MCP servers the thread enables (thread.setMcpServers); null: every enabled server
     */
    mcpServers?: string[] | null;
  }[];
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.thread.read".
 */
export interface ResultThreadRead {
  threadId: string;
  revision: number;
  nodes: {
    id: string;
    kind: string;
  }[];
  /**
   * the seq of the thread's last event published before the read: every event up to it is reflected in the result; apply only events with a greater seq
   */
  lastSeq: number;
  /**
   * the model the thread chose (thread.setModel); null: the default model
   */
  model?: string | null;
  /**
   * each run the branch's nodes belong to, once, in the order of the nodes: its state, stop reason and usage (with costUsd when its model has a price)
   */
  runs?: {
    runId: string;
    turnId: string;
    state: string;
    usage: {};
  }[];
  /**
   * the MCP servers the thread enables (thread.setMcpServers); null: every enabled server
   */
  mcpServers?: string[] | null;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.thread.branches".
 */
export interface ResultThreadBranches {
  threadId: string;
  /**
   * the thread's leaf: the tip of the selected branch; null for a thread without nodes
   */
  selectedLeafNodeId: string | null;
  /**
   * the leaves of the thread's tree, newest first; the selected branch is always listed
   *
   * @maxItems 200
   */
  branches: {
    leafNodeId: string;
    /**
     * the last node the branch shares with the selected branch; null for the selected branch, and for a branch that shares no node with it (a root of its own)
     */
    forkNodeId: string | null;
    /**
     * the branch's first node that the selected branch does not hold (where it goes after forkNodeId); null for the selected branch
     */
    firstNodeId: string | null;
    /**
     * firstNodeId's creation time, unix milliseconds (orders the branches that leave at one node); null for the selected branch
     */
    firstNodeCreatedAt: number | null;
    lastNodeKind: string;
    /**
     * the first 120 characters of the branch's last user or assistant text; empty when it has none
     */
    preview: string;
    /**
     * the leaf's creation time, unix milliseconds
     */
    updatedAt: number;
    /**
     * nodes from the root to the leaf
     */
    length: number;
  }[];
  /**
   * more branches exist than the 200 listed
   */
  truncated: boolean;
  /**
   * the seq of the thread's last event published before the read, as for thread.read
   */
  lastSeq: number;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.model.list".
 */
export interface ResultModelList {
  models: {
    /**
     * what thread.setModel names
     */
    name: string;
    /**
     * the configured provider's name
     */
    provider: string;
    /**
     * what the provider calls the model
     */
    modelId: string;
    /**
     * tokens; 0 = unknown
     */
    contextWindow: number;
    maxOutputTokens?: number | null;
    vision: boolean;
    tools: boolean;
    reasoning?: boolean;
    /**
     * US dollars per million tokens
     */
    price?: {
      inputPerMillion: number;
      outputPerMillion: number;
      cachedInputPerMillion?: number;
      reasoningOutputPerMillion?: number;
    };
  }[];
  /**
   * the model of threads that chose none
   */
  defaultModel: string | null;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.turn.submit".
 */
export interface ResultTurnSubmit {
  turnId: string;
  runId: string;
  userNodeId: string;
  replayed?: true;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.turn.interrupt".
 */
export interface ResultTurnInterrupt {
  interrupted: boolean;
  turnId?: string;
  /**
   * the run's terminal state once the interrupt took effect
   */
  state?: string;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.turn.steer".
 */
export interface ResultTurnSteer {
  steerId: string;
  turnId: string;
  runId: string;
  admissionSeq: number;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.turn.input".
 */
export interface ResultTurnInput {
  action: "started" | "steered" | "enqueued";
  reason?: string;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.turn.enqueue".
 */
export interface ResultTurnEnqueue {
  threadId: string;
  itemId: string;
  position: number;
  queueLength: number;
  revision: number;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.queue.start".
 */
export interface ResultQueueStart {
  turnId: string;
  runId: string;
  itemId: string;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.queue.update".
 */
export interface ResultQueueUpdate {
  threadId: string;
  itemId: string;
  itemRevision: number;
  revision: number;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.queue.remove".
 */
export interface ResultQueueRemove {
  threadId: string;
  itemId: string;
  queueLength: number;
  revision: number;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.queue.list".
 */
export interface ResultQueueList {
  threadId: string;
  items: {
    itemId: string;
    position: number;
    input: Input;
    revision: number;
  }[];
  revision: number;
  /**
   * the seq of the thread's last event published before the read: every event up to it is reflected in the result; apply only events with a greater seq
   */
  lastSeq: number;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.run.resume".
 */
export interface ResultRunResume {
  turnId: string;
  runId: string;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.run.resolveUncertain".
 */
export interface ResultRunResolveUncertain {
  runId: string;
  turnId: string;
  resolution: "retry" | "mark_done" | "fail";
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.approval.response".
 */
export interface ResultApprovalResponse {
  approvalId: string;
  runId: string;
  decision: "accept" | "acceptForSite" | "decline";
  nodeId?: string;
  alreadySettled?: boolean;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.interaction.response".
 */
export interface ResultInteractionResponse {
  interactionId: string;
  runId: string;
  alreadySettled?: boolean;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.policy.read".
 */
export interface ResultPolicyRead {
  defaultMode: string;
  rules?: SiteRule[];
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "siteRule".
 */
export interface SiteRule {
  id: string;
  scope: string;
  tool?: string | null;
  effects?: "read" | "write" | null;
  decision: "allow" | "ask" | "deny";
  version: number;
  createdAt?: number;
  threadId?: string | null;
  workspace?: string | null;
  lifetime?: "untilRevoked" | "session" | "turn";
  sessionId?: string | null;
  turnId?: string | null;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.takeover.start".
 */
export interface ResultTakeoverStart {
  interrupted: boolean;
  turnId?: string;
  /**
   * the run's terminal state once the interrupt took effect
   */
  state?: string;
  target: string;
  holder: "person";
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.takeover.end".
 */
export interface ResultTakeoverEnd {
  target: string;
  holder: "agent";
  /**
   * false when no person held the target (nothing happened)
   */
  handedBack: boolean;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.session.subscribe".
 */
export interface ResultSessionSubscribe {
  threadIds: "all" | string[];
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "result.session.unsubscribe".
 */
export interface ResultSessionUnsubscribe {
  threadIds: "all" | string[];
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.turn.start".
 */
export interface EventTurnStart {
  turnId: string;
  runId: string;
  resumed: boolean;
  recovered?: boolean;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.item.start".
 */
export interface EventItemStart {
  itemId: string;
  kind: string;
  turnId: string;
  toolCallId?: string;
  name?: string;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.item.delta".
 */
export interface EventItemDelta {
  itemId: string;
  text?: string;
  reasoning?: string;
  toolProgress?: {};
  coalesced?: true;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.item.complete".
 */
export interface EventItemComplete {
  itemId: string;
  kind: string;
  turnId: string;
  node: {
    id: string;
    kind:
      | "user_message"
      | "assistant_message"
      | "tool_call"
      | "tool_result"
      | "notice"
      | "approval_decision"
      | "compaction";
  };
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.token.usage".
 */
export interface EventTokenUsage {
  turnId: string;
  runId: string;
  usage: {};
  total: {};
}
/**
 * The run as last committed; with persisted false, a change of it could not be written and it keeps this state.
 *
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.run.updated".
 */
export interface EventRunUpdated {
  runId: string;
  state: string;
  revision: number;
  persisted?: boolean;
  error?: KeelError;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.thread.updated".
 */
export interface EventThreadUpdated {
  threadId: string;
  title?: string;
  revision?: number;
  /**
   * thread.fork: the thread it was forked from
   */
  parentThreadId?: string;
  /**
   * thread.fork: the node the fork starts after
   */
  forkNodeId?: string;
  /**
   * thread.selectBranch, and turn.submit with parentNodeId: the thread's new leaf
   */
  leafNodeId?: string;
  /**
   * thread.setModel: the model the thread's next turns use
   */
  model?: string;
  /**
   * thread.setMcpServers: the servers whose tools the thread's next turns may use; null: every enabled server
   */
  mcpServers?: string[] | null;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.queue.updated".
 */
export interface EventQueueUpdated {
  threadId: string;
  items?: {
    itemId: string;
    position: number;
    revision?: number;
  }[];
  revision?: number;
  held?: boolean;
  error?: KeelError;
  minItems?: 0;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.approval.request".
 */
export interface EventApprovalRequest {
  approvalId: string;
  threadId: string;
  runId: string;
  turnId: string;
  toolCallId: string;
  callNodeId?: string;
  tool: {
    name: string;
  };
  /**
   * the call's arguments
   */
  arguments: {
    [k: string]: unknown;
  };
  /**
   * the resolved target: origin, tabId, frameId, serverId, path as the tool has them
   */
  target?: {};
  /**
   * why the gatekeeper asks
   */
  reason?: string;
  ruleVersion?: number;
  offers: string[];
  resent?: boolean;
  /**
   * What the call will do, computed before the approval was persisted and stored with it (docs/protocol.md, approvals). Show target first and whole, mark it when sensitive, then the change.
   */
  preview?: {
    action: string;
    target: string;
    sensitive: boolean;
    sensitiveReasons: string[];
    change: {
      format: "diff" | "excerpt" | "arguments" | "none";
      text: string;
      bytesBefore?: number;
      bytesAfter?: number;
    };
  };
  /**
   * With acceptForSite offered: the rule it would write, confined to this thread (and a local tool's workspace folder) for the lifetime the person picks.
   */
  remember?: {
    scope: string;
    scopeText?: string;
    tool?: string;
    effects?: "read" | "write";
    threadId: string;
    workspace?: string;
    lifetimes: ("turn" | "session" | "untilRevoked")[];
    defaultLifetime: "turn" | "session" | "untilRevoked";
    where?: string;
    text: string;
  };
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.approval.resolved".
 */
export interface EventApprovalResolved {
  approvalId: string;
  runId: string;
  decision: string;
  /**
   * the approval_decision node that records the decision
   */
  nodeId?: string;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.interaction.request".
 */
export interface EventInteractionRequest {
  interactionId: string;
  threadId: string;
  runId: string;
  turnId: string;
  kind: "ask_user" | "timer";
  toolCallId: string;
  toolName?: string;
  /**
   * the tool's prompt
   */
  request: {
    [k: string]: unknown;
  };
  dueAtMs?: number;
  resent?: boolean;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.interaction.resolved".
 */
export interface EventInteractionResolved {
  interactionId: string;
  runId: string;
  fired?: boolean;
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.policy.updated".
 */
export interface EventPolicyUpdated {}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.run.uncertain".
 */
export interface EventRunUncertain {
  runId: string;
  turnId: string;
  toolCallId: string;
  name: string;
  offers: ("retry" | "mark_done" | "fail")[];
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.takeover.updated".
 */
export interface EventTakeoverUpdated {
  threadId: string;
  target: string;
  holder: "person" | "agent";
  /**
   * what the target answered (keel/takeover.h)
   */
  details?: {};
}
/**
 * This interface was referenced by `KeelProtocol`'s JSON-Schema
 * via the `definition` "event.turn.complete".
 */
export interface EventTurnComplete {
  turnId: string;
  runId: string;
  /**
   * How the turn ended; the provider's own word is providerStopReason. A reply that still asks for tools after the failure breaker turned them off ends with error (code turn.tools_disabled), never with tool_use.
   */
  stopReason: "end" | "max_tokens" | "content_filter" | "interrupted" | "budget_pause" | "error";
  providerStopReason?: string;
  mayBeIncomplete?: boolean;
  /**
   * false: not even the turn's failure could be written; the thread refuses new work (turn.unpersisted) until a restart recovers the run
   */
  persisted?: boolean;
  error?: KeelError1;
  usage?: {};
  budgetTokens?: number;
}
/**
 * With stopReason error: why, e.g. provider.* (the model's API failed, provider.protocol_error for a malformed response: no tool ran), context.window_exceeded, context.compaction_failed, turn.tools_disabled (after 5 failed tool calls in a row tools were off and the final reply asked for a tool anyway; its calls got 'not run' results).
 */
export interface KeelError1 {
  code: ErrorCode;
  message: string;
}
