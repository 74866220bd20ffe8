/**
 * Static checks of the deployment files (Dockerfile, .dockerignore, docker-compose.yml, k8s/). Nothing here
 * needs Docker or a cluster: the files are parsed and checked for structure and for consistency with the
 * code (entry points that exist, settings that loadConfig accepts, env names the code actually reads).
 * Every Kubernetes manifest is also validated against the official OpenAPI schemas (kubernetes-models,
 * @kubernetes-models/keda), see validateManifests below.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, sep } from 'node:path';
import { loadConfig, migrationDatabaseUrl } from '@conclave/config';
import { load, loadAll } from 'js-yaml';

const ROOT = join(__dirname, '..');
const read = (relative: string): string => readFileSync(join(ROOT, relative), 'utf8');

// ---------------------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------------------

/** Every `dist/...js` path mentioned in a command. */
const distPaths = (words: readonly string[]): string[] =>
  words.flatMap((word) => word.match(/\bdist\/[\w@./-]+\.js\b/g) ?? []);

/** Source files the TypeScript build compiles, as one string, to check that env names are really read. */
function sourceText(): string {
  const texts: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir))) {
      const path = `${dir}/${entry}`;
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (/\.ts$/.test(entry) && !/\.(spec|e2e-spec)\.ts$/.test(entry)) texts.push(read(path));
    }
  };
  walk('apps');
  walk('libs');
  return texts.join('\n');
}

/** Env names set by the deployment files that the code does not read itself but that still matter. */
const ENV_NOT_READ_BY_CODE = new Set(['SCARF_ANALYTICS']);

function expectReadByCode(names: Iterable<string>, where: string): void {
  const source = sourceText();
  for (const name of names) {
    if (ENV_NOT_READ_BY_CODE.has(name)) continue;
    expect({ where, name, readByCode: new RegExp(`\\b${name}\\b`).test(source) }).toEqual({
      where,
      name,
      readByCode: true,
    });
  }
}

// ---------------------------------------------------------------------------------------------------------
// Dockerfile
// ---------------------------------------------------------------------------------------------------------

interface Instruction {
  keyword: string;
  args: string;
}
interface Stage {
  image: string;
  name?: string;
  instructions: Instruction[];
}

function parseDockerfile(text: string): Stage[] {
  const lines = text.replace(/\\\r?\n/g, ' ').split(/\r?\n/);
  const stages: Stage[] = [];
  for (const raw of lines) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [, keyword, args] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const instruction = { keyword: keyword.toUpperCase(), args: args.replace(/\s+/g, ' ').trim() };
    if (instruction.keyword === 'FROM') {
      const [image, as, name] = instruction.args.split(' ').filter((w) => !w.startsWith('--'));
      stages.push({ image, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
    } else {
      if (stages.length === 0) throw new Error(`Dockerfile: ${instruction.keyword} before the first FROM`);
      stages[stages.length - 1].instructions.push(instruction);
    }
  }
  return stages;
}

const dockerfile = parseDockerfile(read('Dockerfile'));
const finalStage = dockerfile[dockerfile.length - 1];
const runs = (stage: Stage): string[] =>
  stage.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args);

/** `ENV A=1 B=2` (and the legacy `ENV A 1`) of a stage. */
function stageEnv(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { keyword, args } of stage.instructions) {
    if (keyword !== 'ENV') continue;
    if (!args.includes('=')) {
      const [name, ...value] = args.split(' ');
      env[name] = value.join(' ');
      continue;
    }
    for (const [, name, value] of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)) {
      env[name] = value.replace(/^"(.*)"$/, '$1');
    }
  }
  return env;
}
const imageEnv = stageEnv(finalStage);

function dockerCmd(stage: Stage): string[] {
  const cmd = stage.instructions.filter((i) => i.keyword === 'CMD').pop();
  expect(cmd).toBeDefined();
  const parsed: unknown = JSON.parse(cmd!.args); // exec form, so SIGTERM reaches node directly
  expect(Array.isArray(parsed)).toBe(true);
  return parsed as string[];
}

describe('Dockerfile', () => {
  it('is a multi-stage build on node:20-bookworm-slim', () => {
    expect(dockerfile.length).toBeGreaterThanOrEqual(2);
    for (const stage of dockerfile) expect(stage.image).toBe('node:20-bookworm-slim');
  });

  it('installs the locked versions (scripts/install-deps.js) and builds in the first stage', () => {
    const all = dockerfile.flatMap(runs);
    for (const command of all) expect(command).not.toMatch(/\bnpm (install|i|add)\b/);
    const build = runs(dockerfile[0]).join(' && ');
    expect(build).toMatch(/\bnode scripts\/install-deps\.js\b/);
    expect(build).toMatch(/\bnpm run build\b/);
    const copied = dockerfile[0].instructions.filter((i) => i.keyword === 'COPY').map((i) => i.args);
    expect(copied.some((args) => args.includes('package-lock.json'))).toBe(true);
  });

  it('keeps only production dependencies and the compiled output in the runtime stage', () => {
    expect(runs(finalStage).join(' && ')).toMatch(/\binstall-deps\.js\b[^&]*--omit=dev\b/);
    expect(runs(finalStage).join(' ')).not.toMatch(/\bnpm run build\b/);
    const fromBuild = finalStage.instructions.filter(
      (i) => i.keyword === 'COPY' && i.args.startsWith(`--from=${dockerfile[0].name}`),
    );
    expect(fromBuild.map((i) => i.args.split(' ')[1])).toEqual(['/app/dist']);
  });

  it('runs as the non-root node user', () => {
    const users = finalStage.instructions.filter((i) => i.keyword === 'USER').map((i) => i.args);
    expect(users.length).toBeGreaterThan(0);
    expect(users[users.length - 1]).toBe('node');
    const lastUser = finalStage.instructions.map((i) => i.keyword).lastIndexOf('USER');
    const lastRun = finalStage.instructions.map((i) => i.keyword).lastIndexOf('RUN');
    expect(lastUser).toBeGreaterThan(lastRun);
  });

  it('sets production mode, disables Scarf analytics and starts the gateway by default', () => {
    expect(imageEnv).toMatchObject({ NODE_ENV: 'production', SCARF_ANALYTICS: 'false' });
    expect(stageEnv(dockerfile[0])).toMatchObject({ SCARF_ANALYTICS: 'false' });
    expect(dockerCmd(finalStage)).toEqual(['node', 'dist/apps/gateway/src/main.js']);
  });

  it('copies only files that exist and are not excluded by .dockerignore', () => {
    const ignored = read('.dockerignore')
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    expect(ignored).toEqual(
      expect.arrayContaining(['node_modules', 'dist', '.git', 'coverage', '*.log', '.env']),
    );
    for (const stage of dockerfile) {
      for (const { keyword, args } of stage.instructions) {
        if (keyword !== 'COPY' || args.startsWith('--from')) continue;
        const words = args.split(' ').filter((w) => !w.startsWith('--'));
        for (const source of words.slice(0, -1)) {
          expect({ source, exists: existsSync(join(ROOT, source)) }).toEqual({ source, exists: true });
          expect(ignored).not.toContain(source.split('/')[0]);
        }
      }
    }
  });

  it('copies the tsconfig that tsconfig.build.json extends', () => {
    const build = JSON.parse(read('tsconfig.build.json')) as { extends?: string };
    const copied = dockerfile[0].instructions
      .filter((i) => i.keyword === 'COPY')
      .flatMap((i) => i.args.split(' '));
    expect(copied).toContain('tsconfig.build.json');
    if (build.extends) expect(copied).toContain(build.extends.replace(/^\.\//, ''));
  });
});

// ---------------------------------------------------------------------------------------------------------
// docker-compose.yml
// ---------------------------------------------------------------------------------------------------------

type DependsOn = string[] | Record<string, { condition?: string }>;
interface ComposeService {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: (string | number)[];
  depends_on?: DependsOn;
  healthcheck?: { test?: string | string[] };
  restart?: string;
  stop_grace_period?: string;
  container_name?: string;
  volumes?: string[];
}
interface ComposeFile {
  services: Record<string, ComposeService>;
}

const compose = load(read('docker-compose.yml')) as ComposeFile;
const services = compose.services;
const APP_SERVICES = ['migrate', 'gateway', 'worker'];

const words = (value: string | string[] | undefined): string[] =>
  value === undefined ? [] : Array.isArray(value) ? value.map(String) : value.split(/\s+/).filter(Boolean);

function dependsOn(service: ComposeService): Record<string, string> {
  const deps = service.depends_on ?? {};
  if (Array.isArray(deps)) return Object.fromEntries(deps.map((name) => [name, 'service_started']));
  return Object.fromEntries(
    Object.entries(deps).map(([name, spec]) => [name, spec?.condition ?? 'service_started']),
  );
}

/** Compose variable interpolation (`${VAR}`, `${VAR:-default}`, `${VAR-default}`, `$$`) against `shell`. */
function interpolate(value: string, shell: Record<string, string>): string {
  return value.replace(
    /\$\$|\$\{(\w+)(?:(:?)-([^}]*))?\}|\$(\w+)/g,
    (match, braced, colon, fallback, bare) => {
      if (match === '$$') return '$';
      const name = (braced ?? bare) as string;
      const set = shell[name];
      if (fallback === undefined) return set ?? '';
      if (colon === ':') return set ? set : (fallback as string);
      return set ?? (fallback as string);
    },
  );
}

/** What a container of `service` sees: the image's ENV overridden by the service's environment. */
function composeEnv(service: ComposeService, shell: Record<string, string> = {}): Record<string, string> {
  const entries = Array.isArray(service.environment)
    ? service.environment.map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string])
    : Object.entries(service.environment ?? {}).map(([k, v]) => [k, v === null ? '' : String(v)]);
  const env: Record<string, string> = { ...imageEnv };
  for (const [name, value] of entries) env[name] = interpolate(value ?? '', shell);
  return env;
}

function publishedPorts(service: ComposeService): { host: number; container: number }[] {
  return (service.ports ?? []).map((port) => {
    // `${VAR:-default}` publishes the default when VAR is unset (npm start sets it to its URL's port).
    const resolved = String(port).replace(/\$\{[A-Za-z0-9_]+:-([^}]*)\}/g, '$1');
    const parts = resolved.split('/')[0].split(':');
    return { host: Number(parts[parts.length - 2] ?? parts[0]), container: Number(parts[parts.length - 1]) };
  });
}

function durationSeconds(value: string): number {
  const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001, us: 0.000001 };
  expect(value).toMatch(/^(\d+(\.\d+)?(h|m|s|ms|us))+$/);
  let total = 0;
  for (const [, amount, unit] of value.matchAll(/(\d+(?:\.\d+)?)(ms|us|h|m|s)/g))
    total += Number(amount) * units[unit];
  return total;
}

describe('docker-compose.yml', () => {
  it('defines postgres, redis, migrate, gateway and worker', () => {
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining(['postgres', 'redis', 'migrate', 'gateway', 'worker']),
    );
  });

  it('runs postgres and redis standalone on the default local ports (README quick start)', () => {
    const defaults = loadConfig({});
    const database = new URL(defaults.databaseUrl);
    const redis = new URL(defaults.redisUrl);
    for (const name of ['postgres', 'redis']) {
      expect(services[name].build).toBeUndefined();
      expect(services[name].depends_on).toBeUndefined();
    }
    expect(services.postgres.image).toMatch(/^postgres:16\b/);
    expect(services.redis.image).toMatch(/^redis:7\b/);
    expect(publishedPorts(services.postgres)).toContainEqual({
      host: Number(database.port),
      container: 5432,
    });
    expect(publishedPorts(services.redis)).toContainEqual({ host: Number(redis.port), container: 6379 });
    // The default DATABASE_URL has no password, so the dev database must accept it.
    const postgresEnv = composeEnv(services.postgres);
    if (database.password === '') expect(postgresEnv.POSTGRES_HOST_AUTH_METHOD).toBe('trust');
    else expect(postgresEnv.POSTGRES_PASSWORD).toBe(decodeURIComponent(database.password));
  });

  it('has healthchecks on postgres, redis, gateway and worker (readiness on their own ports)', () => {
    expect(words(services.postgres.healthcheck?.test)).toContain('pg_isready');
    expect(words(services.redis.healthcheck?.test)).toEqual(expect.arrayContaining(['redis-cli', 'ping']));
    const ports = {
      gateway: loadConfig(composeEnv(services.gateway)).port,
      worker: loadConfig(composeEnv(services.worker)).worker.httpPort,
    };
    for (const [name, port] of Object.entries(ports)) {
      const test = words(services[name].healthcheck?.test).join(' ');
      expect(test).toContain(`//127.0.0.1:${port}/health/ready'`);
      expect(test).toMatch(/^CMD node /);
      expect(test).not.toMatch(/\b(curl|wget)\b/); // not in the slim image
    }
  });

  it('runs redis with maxmemory-policy noeviction and AOF persistence on a volume', () => {
    const command = words(services.redis.command);
    const option = (name: string): string | undefined => {
      const at = command.lastIndexOf(`--${name}`);
      return at < 0 ? undefined : command[at + 1];
    };
    expect(option('maxmemory-policy')).toBe('noeviction');
    expect(option('appendonly')).toBe('yes');
    const volumes = services.redis.volumes ?? [];
    expect(volumes.map((v) => String(v).split(':')[1])).toContain('/data');
  });

  it('lets the worker scale with `docker compose up --scale worker=N`', () => {
    expect(services.worker.container_name).toBeUndefined();
    expect(services.worker.ports).toBeUndefined();
  });

  it('builds one image for migrate, gateway and worker from this Dockerfile', () => {
    const images = new Set(APP_SERVICES.map((name) => services[name].image));
    expect(images.size).toBe(1);
    for (const name of APP_SERVICES) {
      const build = services[name].build;
      const context = typeof build === 'string' ? build : build?.context;
      expect(context).toBe('.');
      expect(typeof build === 'string' ? undefined : build?.dockerfile).toBeUndefined();
    }
  });

  it('orders startup: postgres -> migrate -> gateway/worker (and redis healthy)', () => {
    expect(dependsOn(services.migrate)).toEqual({ postgres: 'service_healthy' });
    expect(services.migrate.restart).toBe('no');
    for (const name of ['gateway', 'worker']) {
      expect(dependsOn(services[name])).toMatchObject({
        migrate: 'service_completed_successfully',
        redis: 'service_healthy',
      });
    }
    for (const service of Object.values(services)) {
      for (const dependency of Object.keys(dependsOn(service))) expect(services[dependency]).toBeDefined();
    }
  });

  it('starts each process with its own entry point', () => {
    expect(distPaths(words(services.migrate.command))).toEqual(['dist/apps/ops/src/migrate.js']);
    expect(distPaths(words(services.gateway.command))).toEqual(['dist/apps/gateway/src/main.js']);
    expect(distPaths(words(services.worker.command))).toEqual(['dist/apps/worker/src/main.js']);
    expect(publishedPorts(services.gateway)).toContainEqual({
      host: 3000,
      container: Number(composeEnv(services.gateway).PORT),
    });
  });

  it('gives the worker time to drain and hand back its stages on stop', () => {
    const { shutdownTimeoutMs } = loadConfig(composeEnv(services.worker)).worker;
    expect(services.worker.stop_grace_period).toBeDefined();
    expect(durationSeconds(services.worker.stop_grace_period!)).toBeGreaterThanOrEqual(
      shutdownTimeoutMs / 1000 + 15,
    );
  });

  it('points the apps at the compose postgres and redis services', () => {
    for (const name of APP_SERVICES) {
      const env = composeEnv(services[name]);
      expect(env.SCARF_ANALYTICS).toBe('false');
      expect(services[new URL(env.DATABASE_URL).hostname]).toBe(services.postgres);
      if (name !== 'migrate') expect(services[new URL(env.REDIS_URL).hostname]).toBe(services.redis);
    }
  });

  it('works without keys by default (single-user, simulated) and accepts a production setup', () => {
    const demo = loadConfig(composeEnv(services.gateway));
    expect(demo).toMatchObject({ authMode: 'none', realProviderConfigured: false });
    expect(demo.nodeEnv).not.toBe('production');
    for (const name of APP_SERVICES) expect(() => loadConfig(composeEnv(services[name]))).not.toThrow();

    const shell = { NODE_ENV: 'production', AUTH_MODE: 'apikey', OPENROUTER_API_KEY: 'sk-or-test' };
    for (const name of APP_SERVICES)
      expect(() => loadConfig(composeEnv(services[name], shell))).not.toThrow();
    expect(loadConfig(composeEnv(services.gateway, shell))).toMatchObject({
      nodeEnv: 'production',
      authMode: 'apikey',
      realProviderConfigured: true,
    });
  });

  it('only sets environment variables the code reads', () => {
    for (const name of APP_SERVICES) expectReadByCode(Object.keys(composeEnv(services[name])), name);
  });
});

// ---------------------------------------------------------------------------------------------------------
// k8s/
// ---------------------------------------------------------------------------------------------------------

interface Metadata {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface K8sDoc {
  apiVersion?: string;
  kind?: string;
  metadata?: Metadata;
  spec?: unknown;
  data?: Record<string, unknown>;
  stringData?: Record<string, unknown>;
}
interface Probe {
  httpGet?: { path?: string; port?: number | string };
}
interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  securityContext?: {
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[] };
  };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodTemplate {
  metadata?: Metadata;
  spec: {
    containers: Container[];
    terminationGracePeriodSeconds?: number;
    restartPolicy?: string;
    securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
    volumes?: { name: string }[];
  };
}
interface WorkloadSpec {
  replicas?: number;
  selector?: { matchLabels?: Record<string, string> };
  template: PodTemplate;
}
interface ServiceSpec {
  type?: string;
  selector?: Record<string, string>;
  ports?: { name?: string; port: number; targetPort?: number | string }[];
}
interface IngressBackend {
  service?: { name: string; port: { name?: string; number?: number } };
}
interface IngressSpec {
  ingressClassName?: string;
  defaultBackend?: IngressBackend;
  rules?: {
    host?: string;
    http?: { paths: { path?: string; pathType?: string; backend: IngressBackend }[] };
  }[];
}
interface PdbSpec {
  minAvailable?: number | string;
  maxUnavailable?: number | string;
  selector?: { matchLabels?: Record<string, string> };
}
interface ScaleTargetRef {
  apiVersion?: string;
  kind?: string;
  name: string;
}

const K8S_DIR = 'k8s';
const KUSTOMIZATION = 'kustomization.yaml';
/** Every YAML file under k8s/, relative to it and with forward slashes (`optional/worker-hpa.yaml`). */
const k8sFiles = (readdirSync(join(ROOT, K8S_DIR), { recursive: true }) as string[])
  .map((file) => file.split(sep).join('/'))
  .filter((file) => /\.ya?ml$/.test(file))
  .sort();
/** Files in subdirectories (k8s/optional/) are alternatives an operator swaps in by hand. */
const isOptional = (file: string): boolean => file.includes('/');
/** The two ways to autoscale the worker; exactly one of them is in the kustomization. */
const AUTOSCALER_FILES = ['worker-scaledobject.yaml', 'optional/worker-hpa.yaml'];
/** Queue depth for the worker autoscaler: every gateway replica exports the same queue, so max, not sum. */
const QUEUE_DEPTH_QUERY = 'sum(max by (state) (conclave_queue_jobs{state=~"waiting|prioritized|active"}))';
/** The first of the two `kubectl apply` of a rollout: everything but the gateway and the worker. */
const PRE_DEPLOY_SELECTOR = "-l 'app.kubernetes.io/component notin (gateway,worker)'";
/** The image's `node` user. */
const NODE_UID = 1000;

const kustomization = load(read(`${K8S_DIR}/${KUSTOMIZATION}`)) as {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  resources?: string[];
  images?: { name: string }[];
};
const resources = (kustomization.resources ?? []).map((r) => posix.normalize(r));
const manifestFiles = k8sFiles.filter((file) => file !== KUSTOMIZATION);
const manifests: { file: string; active: boolean; doc: K8sDoc }[] = manifestFiles.flatMap((file) =>
  loadAll(read(`${K8S_DIR}/${file}`)).map((doc) => ({
    file,
    active: resources.includes(file),
    doc: doc as K8sDoc,
  })),
);
const active = (): K8sDoc[] => manifests.filter((m) => m.active).map((m) => m.doc);

function find(kind: string, name: string): K8sDoc {
  const found = manifests.filter(({ doc }) => doc?.kind === kind && doc.metadata?.name === name);
  expect({ kind, name, count: found.length }).toEqual({ kind, name, count: 1 });
  return found[0].doc;
}
const ofKind = (kind: string): K8sDoc[] => active().filter((doc) => doc.kind === kind);
const workload = (kind: string, name: string): WorkloadSpec => find(kind, name).spec as WorkloadSpec;
const container = (spec: WorkloadSpec): Container => {
  expect(spec.template.spec.containers).toHaveLength(1);
  return spec.template.spec.containers[0];
};
const workloads = (): { kind: string; name: string; spec: WorkloadSpec }[] =>
  manifests
    .filter(({ doc }) => doc.kind === 'Deployment' || doc.kind === 'Job')
    .map(({ doc }) => ({ kind: doc.kind!, name: doc.metadata!.name!, spec: doc.spec as WorkloadSpec }));

/** True when every label of `selector` is on `labels` (an empty selector selects nothing here). */
const selects = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined) =>
  Object.keys(selector ?? {}).length > 0 &&
  Object.entries(selector ?? {}).every(([key, value]) => labels?.[key] === value);

/** The one (applied) Deployment whose pods `selector` selects. */
function selectedDeployment(selector: Record<string, string> | undefined, by: string): K8sDoc {
  const selected = ofKind('Deployment').filter((doc) =>
    selects(selector, (doc.spec as WorkloadSpec).template.metadata?.labels),
  );
  expect({ by, deployments: selected.map((d) => d.metadata?.name) }).toEqual({
    by,
    deployments: [expect.any(String)],
  });
  return selected[0];
}

function portNumber(target: Container, port: number | string | undefined): number | undefined {
  if (typeof port === 'number') return port;
  return target.ports?.find((p) => p.name === port)?.containerPort;
}

/** What a container sees: image ENV, then envFrom (ConfigMap, Secret) in order, then env. */
function podEnv(target: Container): Record<string, string> {
  const env: Record<string, string> = { ...imageEnv };
  for (const source of target.envFrom ?? []) {
    const doc = source.configMapRef
      ? find('ConfigMap', source.configMapRef.name)
      : find('Secret', source.secretRef!.name);
    for (const [k, v] of Object.entries(doc.data ?? {})) env[k] = String(v);
    for (const [k, v] of Object.entries(doc.stringData ?? {})) env[k] = String(v);
  }
  for (const { name, value } of target.env ?? []) env[name] = value ?? '';
  return env;
}

/**
 * Schema validation with the kubernetes-models classes (and the KEDA ones): each class's validate() checks a
 * document against the official OpenAPI schema of its apiVersion and kind. The packages are ESM only (their
 * `exports` maps have just an "import" condition), which jest's CommonJS module system cannot load, so a
 * plain `node` child process imports them, validates the documents it reads from stdin and answers in JSON.
 * A document whose apiVersion/kind has no model class fails as unknown.
 */
const VALIDATOR = `
import { readFileSync } from 'node:fs';
const PACKAGES = ['kubernetes-models', '@kubernetes-models/keda'];
const results = [];
for (const doc of JSON.parse(readFileSync(0, 'utf8'))) {
  const apiVersion = doc?.apiVersion;
  const kind = doc?.kind;
  let found;
  for (const pkg of typeof apiVersion === 'string' && typeof kind === 'string' ? PACKAGES : []) {
    let exports;
    try {
      exports = await import(pkg + '/' + apiVersion);
    } catch {
      continue;
    }
    const model = exports[kind];
    if (typeof model === 'function' && model.apiVersion === apiVersion && model.kind === kind) {
      found = { name: pkg + '/' + apiVersion + ' ' + kind, model };
      break;
    }
  }
  if (!found) {
    results.push({ errors: ['no schema for apiVersion ' + apiVersion + ', kind ' + kind] });
    continue;
  }
  try {
    new found.model(doc).validate();
    results.push({ model: found.name, errors: [] });
  } catch (error) {
    results.push({ model: found.name, errors: [String(error?.message ?? error)] });
  }
}
process.stdout.write(JSON.stringify(results));
`;
interface SchemaResult {
  model?: string;
  errors: string[];
}
function validateWithSchemas(docs: unknown[]): SchemaResult[] {
  const run = spawnSync(process.execPath, ['--input-type=module', '--eval', VALIDATOR], {
    cwd: ROOT, // resolves the packages from this project's node_modules
    input: JSON.stringify(docs),
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (run.status !== 0) throw new Error(`schema validator failed: ${run.error ?? run.stderr}`);
  const results = JSON.parse(run.stdout) as SchemaResult[];
  expect(results).toHaveLength(docs.length);
  return results;
}
let schemaResults: SchemaResult[] | undefined;
const schemaResult = (index: number): SchemaResult =>
  (schemaResults ??= validateWithSchemas(manifests.map(({ doc }) => doc)))[index];

describe('k8s schema validation', () => {
  it('rejects a broken manifest and an unknown kind (the validator itself works)', () => {
    const gateway = find('Deployment', 'conclave-gateway');
    const broken = JSON.parse(JSON.stringify(gateway)) as { spec: WorkloadSpec };
    (broken.spec.template.spec.containers[0] as unknown as { image: number }).image = 42;
    const [good, bad, unknown] = validateWithSchemas([
      gateway,
      broken,
      { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'x' } },
    ]);
    expect(good).toEqual({ model: 'kubernetes-models/apps/v1 Deployment', errors: [] });
    expect(bad.errors.join('\n')).toMatch(/containers\/0\/image must be string/);
    expect(unknown.errors).toEqual(['no schema for apiVersion example.com/v1, kind Widget']);
  });

  it.each(manifestFiles)('k8s/%s: every document is valid for its apiVersion and kind', (file) => {
    const indexes = manifests.flatMap((m, index) => (m.file === file ? [index] : []));
    expect(indexes.length).toBeGreaterThan(0);
    for (const index of indexes) {
      const { doc } = manifests[index];
      const id = `${doc?.kind}/${doc?.metadata?.name}`;
      expect({ file, id, ...schemaResult(index) }).toEqual({
        file,
        id,
        model: expect.any(String),
        errors: [],
      });
    }
  });
});

describe('k8s manifests', () => {
  it('has a kustomization listing every manifest outside k8s/optional/ and exactly one worker autoscaler', () => {
    expect(k8sFiles).toContain(KUSTOMIZATION);
    expect(kustomization).toMatchObject({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      namespace: 'conclave',
    });
    for (const resource of resources) {
      expect({ resource, exists: existsSync(join(ROOT, K8S_DIR, resource)) }).toEqual({
        resource,
        exists: true,
      });
      expect(manifestFiles).toContain(resource); // a YAML file inside k8s/, not the kustomization itself
    }
    expect(new Set(resources).size).toBe(resources.length);
    const notAutoscaler = (file: string) => !AUTOSCALER_FILES.includes(file);
    expect(resources.filter(notAutoscaler).sort()).toEqual(
      manifestFiles.filter((f) => !isOptional(f)).filter(notAutoscaler),
    );
    // Two autoscalers on one Deployment would fight over its replica count.
    expect(resources.filter((f) => AUTOSCALER_FILES.includes(f))).toHaveLength(1);
    for (const file of AUTOSCALER_FILES) expect(manifestFiles).toContain(file);
  });

  it('parses every document with apiVersion, kind and metadata.name in the conclave namespace', () => {
    expect(manifests.length).toBeGreaterThan(0);
    for (const { file, doc } of manifests) {
      expect({ file, isObject: typeof doc === 'object' && doc !== null }).toEqual({ file, isObject: true });
      expect({ file, apiVersion: typeof doc.apiVersion, kind: typeof doc.kind }).toEqual({
        file,
        apiVersion: 'string',
        kind: 'string',
      });
      expect({ file, name: doc.metadata?.name }).toEqual({
        file,
        name: expect.stringMatching(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/),
      });
      if (doc.kind !== 'Namespace')
        expect({ file, namespace: doc.metadata?.namespace }).toEqual({ file, namespace: 'conclave' });
    }
    const ids = manifests.map(({ doc }) => `${doc.kind}/${doc.metadata?.name}`);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(
      expect.arrayContaining([
        'Namespace/conclave',
        'ConfigMap/conclave-config',
        'Secret/conclave-secrets',
        'Job/conclave-migrate',
        'Deployment/conclave-gateway',
        'Service/conclave-gateway',
        'Ingress/conclave-gateway',
        'Deployment/conclave-worker',
        'PodDisruptionBudget/conclave-gateway',
        'PodDisruptionBudget/conclave-worker',
        'ScaledObject/conclave-worker',
        'HorizontalPodAutoscaler/conclave-worker',
      ]),
    );
  });

  it('labels objects so the migration can be applied before the gateway and the worker', () => {
    // docs/OPERATIONS.md: `kubectl apply -k k8s/ -l 'app.kubernetes.io/component notin (gateway,worker)'`,
    // wait for the Job, then `kubectl apply -k k8s/`. The first step must bring the Job and everything it
    // needs, and nothing that runs the new image against the old schema.
    const PRE_DEPLOY = ['Namespace', 'ConfigMap', 'Secret', 'Job'];
    for (const { file, doc } of manifests) {
      const component = doc.metadata?.labels?.['app.kubernetes.io/component'];
      const id = `${doc.kind}/${doc.metadata?.name}`;
      const first = !['gateway', 'worker'].includes(component ?? '');
      expect({ file, id, appliedFirst: first }).toEqual({
        file,
        id,
        appliedFirst: PRE_DEPLOY.includes(doc.kind!),
      });
    }
    for (const { spec } of workloads()) {
      expect(spec.template.metadata?.labels?.['app.kubernetes.io/component']).toBeDefined();
    }
    expect(read(`${K8S_DIR}/migrate-job.yaml`)).toContain(`kubectl apply -k k8s/ ${PRE_DEPLOY_SELECTOR}`);
    expect(read('docs/OPERATIONS.md')).toContain(`kubectl apply -k k8s/ ${PRE_DEPLOY_SELECTOR}`);
  });

  it('keeps non-secret settings in the ConfigMap, as strings', () => {
    const data = find('ConfigMap', 'conclave-config').data ?? {};
    for (const [key, value] of Object.entries(data)) {
      expect({ key, type: typeof value }).toEqual({ key, type: 'string' });
      expect(key).not.toMatch(/^DATABASE_URL$|^REDIS_URL$|API_KEY$|PASSWORD$|TOKEN$|SECRET$/);
    }
    expect(data).toMatchObject({
      SCARF_ANALYTICS: 'false',
      NODE_ENV: 'production',
      AUTH_MODE: 'apikey',
      WORKER_HTTP_PORT: expect.any(String),
      WORKER_SHUTDOWN_TIMEOUT_MS: expect.any(String),
    });
    // Fleet-wide provider limits; loadConfig (run on every pod's environment below) checks the JSON.
    const { providerLimits } = loadConfig({ PROVIDER_LIMITS: String(data.PROVIDER_LIMITS) });
    expect(Object.keys(providerLimits.providers).length).toBeGreaterThan(0);
  });

  it('ships the Secret as a template with placeholder values only', () => {
    const secret = find('Secret', 'conclave-secrets');
    const values = { ...(secret.data ?? {}), ...(secret.stringData ?? {}) };
    expect(Object.keys(values).sort()).toEqual(
      [
        'DATABASE_DIRECT_URL',
        'DATABASE_URL',
        'METRICS_TOKEN',
        'OPENAI_API_KEY',
        'OPENAI_BASE_URL',
        'OPENROUTER_API_KEY',
        'REDIS_URL',
      ].sort(),
    );
    for (const [key, value] of Object.entries(values)) {
      // Guards against committing real credentials: every value is empty or visibly a placeholder.
      expect({ key, placeholder: value === '' || String(value).includes('REPLACE_ME') }).toEqual({
        key,
        placeholder: true,
      });
    }
  });

  it('gives every workload container the image, resources, config, and a locked-down non-root user', () => {
    const imageNames = (kustomization.images ?? []).map((i) => i.name);
    expect(
      workloads()
        .map((w) => `${w.kind}/${w.name}`)
        .sort(),
    ).toEqual(['Deployment/conclave-gateway', 'Deployment/conclave-worker', 'Job/conclave-migrate']);
    for (const { name, spec } of workloads()) {
      const pod = spec.template.spec;
      // The image's USER is a name, so the kubelet needs a numeric uid to enforce runAsNonRoot.
      expect({ name, securityContext: pod.securityContext }).toEqual({
        name,
        securityContext: expect.objectContaining({ runAsNonRoot: true, runAsUser: NODE_UID }),
      });
      const volumes = (pod.volumes ?? []).map((v) => v.name);
      for (const c of pod.containers) {
        expect(imageNames).toContain(c.image);
        for (const kind of ['requests', 'limits'] as const) {
          expect({ name, kind, resources: c.resources?.[kind] }).toEqual({
            name,
            kind,
            resources: expect.objectContaining({ cpu: expect.any(String), memory: expect.any(String) }),
          });
        }
        expect({ name, securityContext: c.securityContext }).toEqual({
          name,
          securityContext: expect.objectContaining({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          }),
        });
        for (const mount of c.volumeMounts ?? []) expect(volumes).toContain(mount.name);
        expect(c.envFrom).toEqual([
          { configMapRef: { name: 'conclave-config' } },
          { secretRef: { name: 'conclave-secrets' } },
        ]);
        expect(() => loadConfig(podEnv(c))).not.toThrow();
        expectReadByCode(Object.keys(podEnv(c)), name);
      }
      if (spec.selector) {
        expect(spec.template.metadata?.labels).toEqual(expect.objectContaining(spec.selector.matchLabels));
      }
    }
  });

  it('runs the gateway with API keys, probes on /health/live and /health/ready, and a Service on port 80', () => {
    const spec = workload('Deployment', 'conclave-gateway');
    const gateway = container(spec);
    expect(spec.replicas).toBe(2);
    expect(distPaths(gateway.command ?? [])).toEqual(['dist/apps/gateway/src/main.js']);
    const config = loadConfig(podEnv(gateway));
    expect(config).toMatchObject({ nodeEnv: 'production', authMode: 'apikey' });
    expect(gateway.env).toEqual(
      expect.arrayContaining([
        { name: 'NODE_ENV', value: 'production' },
        { name: 'AUTH_MODE', value: 'apikey' },
      ]),
    );
    expect(gateway.livenessProbe?.httpGet?.path).toBe('/health/live');
    expect(gateway.readinessProbe?.httpGet?.path).toBe('/health/ready');
    for (const probe of [gateway.readinessProbe, gateway.livenessProbe]) {
      expect(portNumber(gateway, probe?.httpGet?.port)).toBe(config.port);
    }
    expect(gateway.ports?.map((p) => p.containerPort)).toEqual([config.port]);

    const service = find('Service', 'conclave-gateway').spec as ServiceSpec;
    expect(service.type ?? 'ClusterIP').toBe('ClusterIP');
    expect(service.ports).toHaveLength(1);
    expect(service.ports![0].port).toBe(80);
    expect(portNumber(gateway, service.ports![0].targetPort)).toBe(config.port);
  });

  it('probes only paths the code serves', () => {
    const source = sourceText();
    for (const { name, spec } of workloads()) {
      for (const c of spec.template.spec.containers) {
        for (const probe of [c.readinessProbe, c.livenessProbe]) {
          const path = probe?.httpGet?.path;
          if (path === undefined) continue;
          // Registered without the leading slash (Nest @Get('health/ready')) or with it (the worker's server).
          expect({
            name,
            path,
            served: source.includes(`'${path.slice(1)}'`) || source.includes(`'${path}'`),
          }).toEqual({ name, path, served: true });
        }
      }
    }
  });

  it('points every Service at one Deployment and at container ports that exist', () => {
    for (const doc of ofKind('Service')) {
      const service = doc.spec as ServiceSpec;
      const target = selectedDeployment(service.selector, `Service/${doc.metadata?.name}`)
        .spec as WorkloadSpec;
      for (const port of service.ports ?? []) {
        const resolved = target.template.spec.containers.map((c) =>
          portNumber(c, port.targetPort ?? port.port),
        );
        expect({ service: doc.metadata?.name, port, exists: resolved.some((p) => p !== undefined) }).toEqual({
          service: doc.metadata?.name,
          port,
          exists: true,
        });
      }
    }
  });

  it('routes every Ingress path to an existing Service port, with websocket-friendly nginx settings', () => {
    const ingresses = ofKind('Ingress');
    expect(ingresses.length).toBeGreaterThan(0);
    for (const doc of ingresses) {
      const spec = doc.spec as IngressSpec;
      expect(spec.ingressClassName).toBe('nginx');
      const backends = [
        ...(spec.defaultBackend ? [spec.defaultBackend] : []),
        ...(spec.rules ?? []).flatMap((rule) => rule.http?.paths.map((p) => p.backend) ?? []),
      ];
      expect(backends.length).toBeGreaterThan(0);
      for (const backend of backends) {
        const service = find('Service', backend.service!.name).spec as ServiceSpec;
        const { name, number } = backend.service!.port;
        const exists = (service.ports ?? []).some((p) => (name ? p.name === name : p.port === number));
        expect({ ingress: doc.metadata?.name, backend, exists }).toEqual({
          ingress: doc.metadata?.name,
          backend,
          exists: true,
        });
      }
    }
    const main = find('Ingress', 'conclave-gateway');
    const annotations = main.metadata?.annotations ?? {};
    for (const timeout of ['proxy-read-timeout', 'proxy-send-timeout']) {
      expect(Number(annotations[`nginx.ingress.kubernetes.io/${timeout}`])).toBeGreaterThanOrEqual(3600);
    }
    expect(annotations['nginx.ingress.kubernetes.io/affinity']).toBe('cookie');
    const paths = (main.spec as IngressSpec).rules!.flatMap((r) => r.http!.paths);
    expect(paths).toContainEqual(expect.objectContaining({ path: '/', pathType: 'Prefix' }));
    // The websocket-only clients are why no sticky sessions are needed; the manifest says so.
    expect(read(`${K8S_DIR}/ingress.yaml`)).toContain("transports: ['websocket']");
  });

  it('gives the worker probes on its own port and a grace period covering the drain', () => {
    const spec = workload('Deployment', 'conclave-worker');
    const worker = container(spec);
    expect(distPaths(worker.command ?? [])).toEqual(['dist/apps/worker/src/main.js']);
    // The autoscaler owns the replica count; a fixed one would reset it on every apply.
    expect(spec.replicas).toBeUndefined();
    const config = loadConfig(podEnv(worker));
    expect(worker.livenessProbe?.httpGet?.path).toBe('/health/live');
    expect(worker.readinessProbe?.httpGet?.path).toBe('/health/ready');
    for (const probe of [worker.readinessProbe, worker.livenessProbe]) {
      expect(portNumber(worker, probe?.httpGet?.port)).toBe(config.worker.httpPort);
    }
    expect(worker.ports?.map((p) => p.containerPort)).toEqual([config.worker.httpPort]);
    // The drain time is set explicitly, so the grace period below is sized against a visible number.
    expect(find('ConfigMap', 'conclave-config').data?.WORKER_SHUTDOWN_TIMEOUT_MS).toBeDefined();
    expect(spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(
      config.worker.shutdownTimeoutMs / 1000 + 15,
    );
  });

  it('protects the gateway and the worker with PodDisruptionBudgets that select their pods', () => {
    const budgets = ofKind('PodDisruptionBudget');
    const covered = budgets.map((doc) => {
      const spec = doc.spec as PdbSpec;
      const target = selectedDeployment(
        spec.selector?.matchLabels,
        `PodDisruptionBudget/${doc.metadata?.name}`,
      );
      const replicas = (target.spec as WorkloadSpec).replicas;
      // Exactly one of the two, and never one that forbids every eviction.
      expect((spec.minAvailable === undefined) !== (spec.maxUnavailable === undefined)).toBe(true);
      if (spec.maxUnavailable !== undefined) expect(spec.maxUnavailable).not.toBe(0);
      if (typeof spec.minAvailable === 'number' && replicas !== undefined)
        expect(spec.minAvailable).toBeLessThan(replicas);
      return target.metadata?.name;
    });
    expect(covered.sort()).toEqual(['conclave-gateway', 'conclave-worker']);
  });

  it('autoscales the worker on queue depth: KEDA by default, an External-metric HPA as the alternative', () => {
    const concurrency = loadConfig(podEnv(container(workload('Deployment', 'conclave-worker')))).worker
      .concurrency;
    const target: ScaleTargetRef = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'conclave-worker' };

    const keda = find('ScaledObject', 'conclave-worker');
    expect(keda.apiVersion).toBe('keda.sh/v1alpha1');
    const scaled = keda.spec as {
      scaleTargetRef: ScaleTargetRef;
      minReplicaCount?: number;
      maxReplicaCount?: number;
      triggers: { type: string; metricType?: string; metadata: Record<string, string> }[];
    };
    expect(scaled.scaleTargetRef).toEqual(target);
    expect(scaled.triggers).toHaveLength(1);
    const [trigger] = scaled.triggers;
    expect(trigger.type).toBe('prometheus');
    expect(trigger.metricType ?? 'AverageValue').toBe('AverageValue');
    expect(trigger.metadata.query).toBe(QUEUE_DEPTH_QUERY);
    expect(trigger.metadata.serverAddress).toMatch(/^https?:\/\//);
    // One replica per WORKER_CONCURRENCY jobs.
    expect(Number(trigger.metadata.threshold)).toBe(concurrency);

    const hpa = find('HorizontalPodAutoscaler', 'conclave-worker');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    const spec = hpa.spec as {
      scaleTargetRef: ScaleTargetRef;
      minReplicas: number;
      maxReplicas: number;
      metrics: { type: string; external?: { metric: { name: string }; target: Record<string, string> } }[];
    };
    expect(spec.scaleTargetRef).toEqual(target);
    expect(spec.metrics).toHaveLength(1);
    expect(spec.metrics[0].type).toBe('External');
    expect(spec.metrics[0].external?.target).toEqual({
      type: 'AverageValue',
      averageValue: String(concurrency),
    });
    // The adapter rule in the file's comment serves this metric with the same query.
    const hpaFile = manifests.find((m) => m.doc === hpa)!.file;
    expect(read(`${K8S_DIR}/${hpaFile}`)).toContain(`as: ${spec.metrics[0].external?.metric.name} }`);
    expect(read(`${K8S_DIR}/${hpaFile}`)).toContain(`metricsQuery: '${QUEUE_DEPTH_QUERY}'`);

    expect([spec.minReplicas, spec.maxReplicas]).toEqual([scaled.minReplicaCount, scaled.maxReplicaCount]);
    expect(spec.minReplicas).toBeGreaterThanOrEqual(2);
    // Only one of the two is applied (the kustomization test checks it); the other lives in k8s/optional/.
    expect(active().filter((doc) => doc === keda || doc === hpa)).toHaveLength(1);
  });

  it('runs migrations as a Job that does not restart in place forever', () => {
    const spec = workload('Job', 'conclave-migrate');
    expect(['Never', 'OnFailure']).toContain(spec.template.spec.restartPolicy);
    expect(distPaths(container(spec).command ?? [])).toEqual(['dist/apps/ops/src/migrate.js']);
  });

  it('lets the migrate Job reach PostgreSQL itself when DATABASE_URL is a transaction pooler', () => {
    const env = podEnv(container(workload('Job', 'conclave-migrate')));
    // As shipped: session mode, no direct URL, so migrations use DATABASE_URL.
    const shipped = loadConfig(env);
    expect(shipped.database.poolMode).toBe('session');
    expect(migrationDatabaseUrl(shipped)).toBe(shipped.databaseUrl);
    // An operator behind PgBouncer fills in the two settings the manifests carry.
    const direct = 'postgres://conclave@db.example.internal:5432/conclave';
    const pooled = { ...env, DATABASE_POOL_MODE: 'transaction' };
    expect(migrationDatabaseUrl(loadConfig({ ...pooled, DATABASE_DIRECT_URL: direct }))).toBe(direct);
    expect(() => migrationDatabaseUrl(loadConfig(pooled))).toThrow(/DATABASE_DIRECT_URL/);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------------------

describe('entry points', () => {
  it('every dist/...js path used by the deployment files is compiled from an existing TypeScript source', () => {
    const build = JSON.parse(read('tsconfig.build.json')) as {
      compilerOptions?: { rootDir?: string; outDir?: string };
      include?: string[];
    };
    expect(build.compilerOptions).toMatchObject({ rootDir: '.', outDir: 'dist' });

    const scripts = (JSON.parse(read('package.json')) as { scripts?: Record<string, string> }).scripts ?? {};
    const used = new Set([
      ...distPaths(dockerCmd(finalStage)),
      ...Object.values(services).flatMap((s) => distPaths(words(s.command))),
      ...workloads().flatMap(({ spec }) =>
        spec.template.spec.containers.flatMap((c) => distPaths([...(c.command ?? []), ...(c.args ?? [])])),
      ),
      ...Object.entries(scripts)
        .filter(([name]) => name.startsWith('prod:'))
        .flatMap(([, command]) => distPaths(words(command))),
    ]);
    expect([...used]).toEqual(
      expect.arrayContaining([
        'dist/apps/gateway/src/main.js',
        'dist/apps/worker/src/main.js',
        'dist/apps/ops/src/migrate.js',
      ]),
    );
    for (const path of used) {
      const source = path.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      expect({ path, source, exists: existsSync(join(ROOT, source)) }).toEqual({
        path,
        source,
        exists: true,
      });
      // Compiled by tsconfig.build.json (apps/*/src/**, libs/*/src/**) and not a test file.
      expect(source).toMatch(/^(apps|libs)\/[^/]+\/src\/.+\.ts$/);
      expect(source).not.toMatch(/\.(spec|e2e-spec)\.ts$/);
    }
    expect(build.include).toEqual(expect.arrayContaining(['apps/*/src/**/*.ts', 'libs/*/src/**/*.ts']));
  });
});
