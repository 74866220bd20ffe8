import {
  Catch,
  Controller,
  Delete,
  Get,
  HttpException,
  Inject,
  Injectable,
  Post,
  Req,
  Res,
  UseFilters,
  UseGuards,
  type ArgumentsHost,
  type CanActivate,
  type ExceptionFilter,
  type ExecutionContext,
} from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { ConclaveConfig } from '@conclave/config';
import { CONFIG } from '@conclave/platform';
import type { Request, Response } from 'express';
import { apiKeyIdOf, ApiKeyGuard, CurrentUser } from '../auth/auth.guard';
import { ApiError } from '../common/api-error';
import { ErrorFilter } from '../common/error.filter';
import { originAllowed } from '../common/origins';
import { McpService } from './mcp.service';

/**
 * Browsers must not drive /mcp from another site (in single-user mode that would be enough to start
 * deliberations in the name of whoever opens the page): a request with an Origin header is refused
 * unless it is the gateway's own or one of CORS_ORIGINS, as for Socket.IO. Clients that are not
 * browsers send no Origin.
 */
@Injectable()
export class McpOriginGuard implements CanActivate {
  constructor(@Inject(CONFIG) private readonly config: ConclaveConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<Request>();
    const origin = request.headers.origin;
    if (originAllowed(origin, request.headers.host, this.config.corsOrigins)) return true;
    throw new ApiError(
      403,
      `Requests from the origin "${String(origin).slice(0, 100)}" may not use /mcp: only the gateway's own ` +
        'origin and those in CORS_ORIGINS may',
    );
  }
}

/**
 * The gateway's error responses (ErrorFilter), and on a 401 the `WWW-Authenticate: Bearer` header
 * MCP clients look for.
 */
@Catch()
export class McpErrorFilter implements ExceptionFilter {
  private readonly inner: ErrorFilter;

  constructor(@Inject(CONFIG) config: ConclaveConfig) {
    this.inner = new ErrorFilter(config.bodyLimit);
  }

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() === 'http' && exception instanceof HttpException && exception.getStatus() === 401) {
      const response = host.switchToHttp().getResponse<Response>();
      if (!response.headersSent) response.setHeader('WWW-Authenticate', 'Bearer realm="conclave"');
    }
    this.inner.catch(exception, host);
  }
}

/** A stateless server offers no GET stream and no session to DELETE: 405, as the transport specification says. */
function methodNotAllowed(response: Response): void {
  response
    .status(405)
    .setHeader('Allow', 'POST')
    .json({
      jsonrpc: '2.0',
      error: {
        code: -32000,
        message: 'Method not allowed: this MCP server is stateless; send requests with POST',
      },
      id: null,
    });
}

/** MCP over Streamable HTTP at /mcp (outside the /api prefix): the same keys, limits and host rules as /api. */
@ApiExcludeController()
@UseFilters(McpErrorFilter)
@Controller('mcp')
export class McpController {
  constructor(private readonly mcp: McpService) {}

  @Post()
  @UseGuards(McpOriginGuard, ApiKeyGuard)
  async post(
    @CurrentUser() userId: string,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    await this.mcp.handle(userId, apiKeyIdOf(request), request, response);
  }

  @Get()
  stream(@Res() response: Response): void {
    methodNotAllowed(response);
  }

  @Delete()
  endSession(@Res() response: Response): void {
    methodNotAllowed(response);
  }
}
