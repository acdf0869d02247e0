// JSON-RPC 2.0 over WebSocket (docs/protocol.md, JSON-RPC framing): one message per text frame, `event`
// notifications for keel's events. Reconnects with capped exponential backoff; pending requests fail with
// client.disconnected when the socket drops (receipted ops carry a submissionId, so a retry replays).
import type { Event } from "../../../clients/ts/protocol";
import { kDisconnected, RpcError, type StateChange, type Transport, type TransportState } from "./transport";

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: RpcError) => void;
}

export interface WebSocketTransportOptions {
  /** Computed per attempt, so a caller may change it (e.g. after a new session). */
  url: () => string;
  initialDelayMs?: number;
  maxDelayMs?: number;
}

export class WebSocketTransport implements Transport {
  private socket: WebSocket | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly eventListeners = new Set<(event: Event) => void>();
  private readonly stateListeners = new Set<(change: StateChange) => void>();
  private current: TransportState = "closed";
  private everOpened = false;
  private failures = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;

  constructor(private readonly options: WebSocketTransportOptions) {}

  get state(): TransportState {
    return this.current;
  }

  connect(): void {
    this.stopped = false;
    this.open();
  }

  close(): void {
    this.stopped = true;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.socket?.close();
    this.socket = null;
    this.failAll();
    this.setState("closed");
  }

  request<T = unknown>(method: string, params: object = {}): Promise<T> {
    const socket = this.socket;
    if (socket === null || this.current !== "open") {
      return Promise.reject(new RpcError(kDisconnected, "not connected to keel"));
    }
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }

  onEvent(listener: (event: Event) => void): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  onState(listener: (change: StateChange) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  private open(): void {
    if (this.stopped) return;
    this.setState("connecting");
    let socket: WebSocket;
    try {
      socket = new WebSocket(this.options.url());
    } catch {
      this.scheduleRetry();
      return;
    }
    this.socket = socket;
    let opened = false;
    socket.onopen = () => {
      opened = true;
      this.everOpened = true;
      this.failures = 0;
      this.setState("open");
    };
    socket.onmessage = (message) => {
      if (typeof message.data === "string") this.receive(message.data);
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.failAll();
      if (!opened) this.failures++;
      this.scheduleRetry();
    };
  }

  private scheduleRetry(): void {
    if (this.stopped) return;
    const initial = this.options.initialDelayMs ?? 200;
    const max = this.options.maxDelayMs ?? 5000;
    const delay = Math.min(max, initial * 2 ** Math.min(this.failures, 8));
    this.setState("waiting");
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.open();
    }, delay);
  }

  private receive(text: string): void {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return;  // not JSON: the server never sends that; nothing to route
    }
    for (const one of Array.isArray(message) ? message : [message]) this.route(one);
  }

  private route(message: unknown): void {
    if (typeof message !== "object" || message === null) return;
    const m = message as Record<string, unknown>;
    if (m["method"] === "event" && typeof m["params"] === "object" && m["params"] !== null) {
      const event = m["params"] as Event;
      for (const listener of this.eventListeners) listener(event);
      return;
    }
    if (typeof m["id"] !== "number") return;
    const pending = this.pending.get(m["id"]);
    if (pending === undefined) return;
    this.pending.delete(m["id"]);
    if ("error" in m && typeof m["error"] === "object" && m["error"] !== null) {
      const error = m["error"] as { code?: number; message?: string; data?: { code?: string } };
      pending.reject(new RpcError(error.data?.code ?? "rpc.error", error.message ?? "refused", error.code));
    } else {
      pending.resolve(m["result"]);
    }
  }

  private failAll(): void {
    for (const pending of this.pending.values()) {
      pending.reject(new RpcError(kDisconnected, "the connection to keel dropped"));
    }
    this.pending.clear();
  }

  private setState(state: TransportState): void {
    this.current = state;
    const change: StateChange = { state, everOpened: this.everOpened, failures: this.failures };
    for (const listener of this.stateListeners) listener(change);
  }
}
