/**
 * Static checks of the deployment files (Dockerfile, .dockerignore, docker-compose.yml, k8s/). Nothing here
 * needs Docker or a cluster: the files are parsed and checked for structure and for consistency with the
 * code (entry points that exist, settings that loadConfig accepts, env names the code actually reads).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '@conclave/config';
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
    const parts = String(port).split('/')[0].split(':');
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

  it('has healthchecks on postgres, redis and gateway', () => {
    expect(words(services.postgres.healthcheck?.test)).toContain('pg_isready');
    expect(words(services.redis.healthcheck?.test)).toEqual(expect.arrayContaining(['redis-cli', 'ping']));
    const gateway = words(services.gateway.healthcheck?.test).join(' ');
    expect(gateway).toContain(`:${composeEnv(services.gateway).PORT}/api/health`);
    expect(gateway).toMatch(/^CMD node /);
    expect(gateway).not.toMatch(/\b(curl|wget)\b/); // not in the slim image
  });

  it('runs redis with maxmemory-policy noeviction', () => {
    const command = words(services.redis.command);
    const at = command.indexOf('--maxmemory-policy');
    expect(at).toBeGreaterThanOrEqual(0);
    expect(command[at + 1]).toBe('noeviction');
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
    expect(distPaths(words(services.migrate.command))).toEqual(['dist/libs/persistence/src/cli/migrate.js']);
    expect(distPaths(words(services.gateway.command))).toEqual(['dist/apps/gateway/src/main.js']);
    expect(distPaths(words(services.worker.command))).toEqual(['dist/apps/worker/src/main.js']);
    expect(publishedPorts(services.gateway)).toContainEqual({
      host: 3000,
      container: Number(composeEnv(services.gateway).PORT),
    });
  });

  it('gives the worker time to finish its active stages on stop', () => {
    expect(services.worker.stop_grace_period).toBeDefined();
    expect(durationSeconds(services.worker.stop_grace_period!)).toBeGreaterThanOrEqual(600);
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
}
interface PodTemplate {
  metadata?: Metadata;
  spec: {
    containers: Container[];
    terminationGracePeriodSeconds?: number;
    restartPolicy?: string;
    securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  };
}
interface WorkloadSpec {
  replicas?: number;
  selector?: { matchLabels?: Record<string, string> };
  template: PodTemplate;
}

const K8S_DIR = 'k8s';
const k8sFiles = readdirSync(join(ROOT, K8S_DIR))
  .filter((file) => /\.ya?ml$/.test(file))
  .sort();
const KUSTOMIZATION = 'kustomization.yaml';
const kustomization = load(read(`${K8S_DIR}/${KUSTOMIZATION}`)) as {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  resources?: string[];
  images?: { name: string }[];
};
const manifests: { file: string; doc: K8sDoc }[] = k8sFiles
  .filter((file) => file !== KUSTOMIZATION)
  .flatMap((file) => loadAll(read(`${K8S_DIR}/${file}`)).map((doc) => ({ file, doc: doc as K8sDoc })));

function find(kind: string, name: string): K8sDoc {
  const found = manifests.filter(({ doc }) => doc?.kind === kind && doc.metadata?.name === name);
  expect({ kind, name, count: found.length }).toEqual({ kind, name, count: 1 });
  return found[0].doc;
}
const workload = (kind: string, name: string): WorkloadSpec => find(kind, name).spec as WorkloadSpec;
const container = (spec: WorkloadSpec): Container => {
  expect(spec.template.spec.containers).toHaveLength(1);
  return spec.template.spec.containers[0];
};
const workloads = (): { kind: string; name: string; spec: WorkloadSpec }[] =>
  manifests
    .filter(({ doc }) => doc.kind === 'Deployment' || doc.kind === 'Job')
    .map(({ doc }) => ({ kind: doc.kind!, name: doc.metadata!.name!, spec: doc.spec as WorkloadSpec }));

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

describe('k8s manifests', () => {
  it('has a kustomization listing exactly the manifest files present', () => {
    expect(k8sFiles).toContain(KUSTOMIZATION);
    expect(kustomization).toMatchObject({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      namespace: 'conclave',
    });
    expect([...(kustomization.resources ?? [])].sort()).toEqual(k8sFiles.filter((f) => f !== KUSTOMIZATION));
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
        name: expect.stringMatching(/^[a-z0-9-]+$/),
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
        'Deployment/conclave-worker',
        'HorizontalPodAutoscaler/conclave-worker',
      ]),
    );
  });

  it('keeps non-secret settings in the ConfigMap, as strings', () => {
    const data = find('ConfigMap', 'conclave-config').data ?? {};
    for (const [key, value] of Object.entries(data)) {
      expect({ key, type: typeof value }).toEqual({ key, type: 'string' });
      expect(key).not.toMatch(/^DATABASE_URL$|API_KEY$|PASSWORD$|TOKEN$|SECRET$/);
    }
    expect(data.SCARF_ANALYTICS).toBe('false');
  });

  it('ships the Secret as a template with placeholder values only', () => {
    const secret = find('Secret', 'conclave-secrets');
    const values = { ...(secret.data ?? {}), ...(secret.stringData ?? {}) };
    expect(Object.keys(values)).toEqual(expect.arrayContaining(['DATABASE_URL', 'OPENROUTER_API_KEY']));
    for (const [key, value] of Object.entries(values)) {
      // Guards against committing real credentials: every value is empty or visibly a placeholder.
      expect({ key, placeholder: value === '' || String(value).includes('REPLACE_ME') }).toEqual({
        key,
        placeholder: true,
      });
    }
  });

  it('gives every workload container the image, resources, config, and a non-root user', () => {
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
        securityContext: expect.objectContaining({ runAsNonRoot: true, runAsUser: expect.any(Number) }),
      });
      expect(pod.securityContext!.runAsUser).toBeGreaterThan(0);
      for (const c of pod.containers) {
        expect(imageNames).toContain(c.image);
        for (const kind of ['requests', 'limits'] as const) {
          expect({ name, kind, resources: c.resources?.[kind] }).toEqual({
            name,
            kind,
            resources: expect.objectContaining({ cpu: expect.any(String), memory: expect.any(String) }),
          });
        }
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

  it('runs the gateway with API keys, health probes and a ClusterIP Service on port 80', () => {
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
    for (const probe of [gateway.readinessProbe, gateway.livenessProbe]) {
      expect(probe?.httpGet?.path).toBe('/api/health');
      expect(portNumber(gateway, probe?.httpGet?.port)).toBe(config.port);
    }
    expect(gateway.ports?.map((p) => p.containerPort)).toEqual([config.port]);

    const service = find('Service', 'conclave-gateway').spec as {
      type?: string;
      selector?: Record<string, string>;
      ports?: { port: number; targetPort?: number | string }[];
    };
    expect(service.type ?? 'ClusterIP').toBe('ClusterIP');
    expect(spec.template.metadata?.labels).toEqual(expect.objectContaining(service.selector));
    expect(service.ports).toHaveLength(1);
    expect(service.ports![0].port).toBe(80);
    expect(portNumber(gateway, service.ports![0].targetPort)).toBe(config.port);
  });

  it('gives the worker a termination grace period longer than a stage', () => {
    const spec = workload('Deployment', 'conclave-worker');
    expect(spec.replicas).toBe(2);
    expect(distPaths(container(spec).command ?? [])).toEqual(['dist/apps/worker/src/main.js']);
    expect(spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(600);
  });

  it('autoscales the worker on CPU between 2 and 10 replicas', () => {
    const hpa = find('HorizontalPodAutoscaler', 'conclave-worker');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    const spec = hpa.spec as {
      scaleTargetRef: { apiVersion: string; kind: string; name: string };
      minReplicas: number;
      maxReplicas: number;
      metrics: { type: string; resource?: { name: string } }[];
    };
    expect(spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'conclave-worker',
    });
    expect([spec.minReplicas, spec.maxReplicas]).toEqual([2, 10]);
    expect(spec.metrics).toContainEqual(
      expect.objectContaining({ type: 'Resource', resource: expect.objectContaining({ name: 'cpu' }) }),
    );
    // CPU utilization is relative to requests, so the worker must declare them.
    expect(container(workload('Deployment', 'conclave-worker')).resources?.requests?.cpu).toBeDefined();
  });

  it('runs migrations as a Job that does not restart in place forever', () => {
    const spec = workload('Job', 'conclave-migrate');
    expect(['Never', 'OnFailure']).toContain(spec.template.spec.restartPolicy);
    expect(distPaths(container(spec).command ?? [])).toEqual(['dist/libs/persistence/src/cli/migrate.js']);
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
        'dist/libs/persistence/src/cli/migrate.js',
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
