// Preloaded into the conformance suite (node --import): it sends every request with the bearer token in
// GATEWAY_TOKEN, as any client configured for the gateway does. The suite has no option for a header,
// and the gateway has no unauthenticated mode, so the credential is added here, on the client's side.
import { createRequire } from "node:module";

const token = process.env.GATEWAY_TOKEN;
if (!token) throw new Error("conformance_bearer.mjs: set GATEWAY_TOKEN");
// the suite's own undici: its request() and the SDK's fetch both go through the global dispatcher
const { Agent, setGlobalDispatcher } = createRequire(process.env.CONFORMANCE_PACKAGE)("undici");

function withBearer(headers) {
  if (Array.isArray(headers)) return [...headers, "authorization", `Bearer ${token}`];
  const entries = headers && typeof headers[Symbol.iterator] === "function" ? [...headers] : Object.entries(headers ?? {});
  return { ...Object.fromEntries(entries), authorization: `Bearer ${token}` };
}

setGlobalDispatcher(
  new Agent().compose((dispatch) => (options, handler) => dispatch({ ...options, headers: withBearer(options.headers) }, handler)),
);
