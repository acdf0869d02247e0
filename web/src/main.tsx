// Entry point: find keel (bootstrap), build the transport, start the store, render.
import { render } from "preact";
import { resolveEndpoint } from "./bootstrap";
import { AppStore } from "./store";
import { WebSocketTransport } from "./transport/websocket_transport";
import { App } from "./ui/app";

async function main(): Promise<void> {
  const endpoint = await resolveEndpoint(window.location, window.history);
  const transport = new WebSocketTransport({ url: () => endpoint.url });
  const store = new AppStore(transport, endpoint.checkSession);
  const root = document.getElementById("app");
  if (root === null) return;
  render(<App store={store} />, root);
  store.start();
}

void main();
