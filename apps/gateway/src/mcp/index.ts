export { McpController, McpErrorFilter, McpOriginGuard } from './mcp.controller';
export { McpModule } from './mcp.module';
export { McpService } from './mcp.service';
