import { McpController, McpErrorFilter, McpOriginGuard } from './mcp.controller';
import { McpService } from './mcp.service';

export { McpController, McpErrorFilter, McpOriginGuard } from './mcp.controller';
export { McpService } from './mcp.service';

/**
 * The MCP server's Nest pieces. They are declared by the module that provides the services they
 * use (DeliberationsService, CancelService, EventHub, StreamRegistry, and AuthService and
 * RateLimiter for ApiKeyGuard), as ModelsController is: a module of their own could not see them.
 */
export const MCP_CONTROLLERS = [McpController];
export const MCP_PROVIDERS = [McpService, McpOriginGuard, McpErrorFilter];
