// How the page finds keel and proves who it is (docs/web.md, Bootstrap).
// Served by keel: a one-time `#token=` is exchanged for an HttpOnly session cookie (POST /session), the hash
// is dropped from the address bar, and the WebSocket at /rpc is authenticated by that cookie. When a
// reconnect fails, the page asks keel (POST /session, no token) whether the cookie is still known: after a
// keel restart it is not, and the page asks for the new link (opened in any tab, it fixes every tab).
// Development and tests: `?rpc=ws://127.0.0.1:N/&token=T` points the page at any keel serve --listen
// (started with --allow-origin for this page's origin); the token goes in the WebSocket URL's query.

/** What `POST /session` without a token says about this page's cookie: keel knows it, keel answers but does
 * not know it (keel restarted: sessions live as long as the process), or keel is not reachable. */
export type SessionCheck = "valid" | "unknown" | "unreachable";

export interface Endpoint {
  url: string;
  /** where the page came from, to say what to do when keel refuses it */
  mode: "served" | "override";
  /** served by keel: asks keel whether the session cookie is still good (after a failed reconnect) */
  checkSession?: () => Promise<SessionCheck>;
}

async function checkSession(): Promise<SessionCheck> {
  try {
    const response = await fetch("/session", { method: "POST" });
    if (response.status === 401) return "unknown";
    return response.ok ? "valid" : "unreachable";
  } catch {
    return "unreachable";
  }
}

export async function resolveEndpoint(location: Location, history: History): Promise<Endpoint> {
  const query = new URLSearchParams(location.search);
  const override = query.get("rpc");
  if (override !== null) {
    const url = new URL(override);
    const token = query.get("token");
    if (token !== null) url.searchParams.set("token", token);
    return { url: url.toString(), mode: "override" };
  }
  const hash = new URLSearchParams(location.hash.replace(/^#/, ""));
  const token = hash.get("token");
  if (token !== null) {
    try {
      await fetch("/session", { method: "POST", headers: { Authorization: "Bearer " + token } });
    } finally {
      history.replaceState(null, "", location.pathname + location.search);
    }
  }
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return { url: `${scheme}//${location.host}/rpc`, mode: "served", checkSession };
}
