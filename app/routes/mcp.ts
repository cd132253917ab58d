import { serveMcp } from "~/mcp/endpoint.server";

// `/mcp`: MCP over Streamable HTTP (docs/decisions/0013; app/mcp/). POST, GET and DELETE all go
// to the session's transport.
const serve = ({ request, context }: { request: Request; context?: unknown }) => serveMcp(request, context);

export const loader = serve, action = serve;
