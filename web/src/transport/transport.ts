// The app's only way to talk to keel (spec §7: the UI never depends on a concrete transport).
// An implementation carries JSON-RPC-shaped requests and keel's events; it reconnects by itself and
// reports each state change, so the app can resynchronise (initialize{subscribe}, then reads) on "open".
import type { Event } from "../../../clients/ts/protocol";

/** connecting: first attempt or a retry under way; open: requests can be sent; waiting: the last attempt
 * failed and a retry is scheduled; closed: close() was called. */
export type TransportState = "connecting" | "open" | "waiting" | "closed";

export interface StateChange {
  state: TransportState;
  /** true once any connection was ever open (a "refused" page never had one). */
  everOpened: boolean;
  /** failed attempts in a row since the last open connection. */
  failures: number;
}

/** A refused or failed request: `code` is keel's dotted code (data.code) or a client-side one. */
export class RpcError extends Error {
  readonly code: string;
  readonly rpcCode: number | undefined;
  constructor(code: string, message: string, rpcCode?: number) {
    super(message);
    this.code = code;
    this.rpcCode = rpcCode;
  }
}

/** The request failed because the connection is not open or dropped before its answer. */
export const kDisconnected = "client.disconnected";

export interface Transport {
  /** Starts connecting (and reconnecting after every drop) until close(). */
  connect(): void;
  /** Sends one request; resolves with its result, rejects with RpcError. */
  request<T = unknown>(method: string, params?: object): Promise<T>;
  /** Every `event` notification, in arrival order. Returns the unsubscribe function. */
  onEvent(listener: (event: Event) => void): () => void;
  /** Every state change. Returns the unsubscribe function. */
  onState(listener: (change: StateChange) => void): () => void;
  readonly state: TransportState;
  close(): void;
}
