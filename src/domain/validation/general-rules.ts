// Owns the general-inference family: the user's own container (image, tag, port, health
// path, registry credentials, command, metrics target, config file) on top of the common
// rules, and the GeneralSpec draft they produce.

import { resolveImage } from '../image-map.js';
import { findPreset, PRESETS } from '../presets.js';
import type { ConfigFile, GeneralSpec } from '../records.js';
import { checkLimits } from './limits-rules.js';
import { checkAuth, checkAnnotations, checkEnvironment } from './auth-and-env-rules.js';
import {
  checkCluster,
  checkName,
  checkProtocol,
  checkRoutingPolicy,
  checkScaling,
  checkTopLevelHardware,
  need,
  plainSecret,
  secretEnvChanges,
  secretWillBeSet,
} from './common-rules.js';
import { kindOf, type Req } from './shape.js';
import { checkRolloutMode, checkTraffic } from './traffic-rules.js';
import type { DeploymentDraft, Options, ValidationContext } from './types.js';

const PORT_MAX = 65535;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

function checkImage(req: Req): string | undefined {
  if (!req.required('image', 'image is required: the container image to run, given without a tag')) return undefined;
  const image = req.str('image');
  if (image === undefined) return undefined;
  if (/\s/.test(image)) {
    req.add('image', 'image must not contain whitespace');
    return undefined;
  }
  const lastSegment = image.slice(image.lastIndexOf('/') + 1);
  if (image.includes('@') || lastSegment.includes(':')) {
    req.add('image', 'image must be given without a tag or digest: put the tag in `tag`');
    return undefined;
  }
  return image;
}

function checkPreset(req: Req): string | null {
  const id = nonEmpty(req.str('preset'));
  if (id !== null && !findPreset(id)) {
    req.add('preset', `unknown preset "${id}": choose one of ${PRESETS.map((p) => p.id).join(', ')} (GET /presets lists them)`);
  }
  return id;
}

/** On the local runtime an image it does not know runs `command` on the host, so it needs one; a container runs the image's entrypoint. */
function checkRunnable(req: Req, ctx: ValidationContext, image: string | undefined, tag: string, command: string[]): void {
  if (image === undefined || command.length > 0 || req.isBad('command') || ctx.imagesRunThemselves === true) return;
  if (resolveImage(ctx.images, image, tag).kind === 'host') {
    req.add(
      'command',
      `image "${image}" is not one the local runtime can run by itself: give a command to run on the host (an installed engine such as llama.cpp's server), use a preset, or use infergate/reference-engine`,
    );
  }
}

function checkTag(req: Req): string {
  const tag = req.str('tag') ?? 'latest';
  if (!TAG.test(tag)) req.add('tag', 'tag must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}, a container image tag');
  return tag;
}

function checkPort(req: Req, field: string, value: number): void {
  if (value < 1 || value > PORT_MAX) req.add(field, `${field} must be between 1 and ${PORT_MAX}`);
}

function checkContainerPort(req: Req): number | undefined {
  if (!req.required('container_port', 'container_port is required: the port the container serves HTTP or gRPC on')) return undefined;
  const port = req.int('container_port');
  if (port !== undefined) checkPort(req, 'container_port', port);
  return port;
}

function checkHealthPath(req: Req): string {
  const path = req.str('health_check_path') ?? '/';
  if (!path.startsWith('/')) req.add('health_check_path', "health_check_path must start with '/', for example /health or /");
  return path;
}

const nonEmpty = (s: string | undefined): string | null => (s === undefined || s === '' ? null : s);

/** registry_credential_id: credentials from the vault, instead of a username and password given here. */
function checkRegistryCredential(req: Req, ctx: ValidationContext, opts: Options): number | null {
  const id = req.int('registry_credential_id') ?? null;
  if (id === null || req.isBad('registry_credential_id')) return null;
  if (!(ctx.registryCredentialIds ?? new Set()).has(id)) {
    req.add('registry_credential_id', `registry_credential_id ${id} is not in the vault (GET /vault/registry-credentials lists them)`);
  } else if (nonEmpty(req.str('registry_username')) !== null || secretWillBeSet(req, 'registry_password', opts)) {
    req.add('registry_credential_id', 'give registry_credential_id, or registry_username and registry_password, not both (set the other pair to null to switch)');
  }
  return id;
}

function checkRegistry(req: Req, opts: Options): string | null {
  const username = nonEmpty(req.str('registry_username'));
  const passwordSet = secretWillBeSet(req, 'registry_password', opts);
  const both = 'set both for a private registry, or neither';
  if (username !== null && !passwordSet && !req.isBad('registry_password')) {
    req.add('registry_password', `registry_password is required with registry_username: ${both}`);
  }
  if (username === null && passwordSet && !req.isBad('registry_username')) {
    req.add('registry_username', `registry_username is required with registry_password: ${both}`);
  }
  return username;
}

function checkMetrics(req: Req): { port: number | null; path: string | null } {
  const port = req.int('metrics_port') ?? null;
  const path = nonEmpty(req.str('metrics_path'));
  const together = 'set metrics_port and metrics_path together or leave both empty (defaults: the container port and /metrics)';
  if (port !== null && path === null && !req.isBad('metrics_path')) req.add('metrics_path', `metrics_path is missing: ${together}`);
  if (port === null && path !== null && !req.isBad('metrics_port')) req.add('metrics_port', `metrics_port is missing: ${together}`);
  if (port !== null) checkPort(req, 'metrics_port', port);
  if (path !== null && !path.startsWith('/')) req.add('metrics_path', "metrics_path must start with '/', for example /metrics");
  return { port, path };
}

const CONFIG_FILE_FIELDS = ['filename', 'mount_path', 'content'];

function checkConfigFile(req: Req): ConfigFile | null {
  const file = req.obj('config_file');
  if (file === undefined) return null;
  for (const key of Object.keys(file)) {
    if (!CONFIG_FILE_FIELDS.includes(key)) {
      req.add(`config_file.${key}`, `unknown field "config_file.${key}": a config file has filename, mount_path and content`);
    }
  }
  const { filename, mount_path: mountPath, content } = file;
  if (typeof filename !== 'string' || filename === '') {
    req.add('config_file.filename', 'config_file.filename is required: the name of the file to mount');
  } else if (filename.includes('/') || filename === '.' || filename === '..') {
    req.add('config_file.filename', "config_file.filename must be a plain file name: no '/', and not . or ..");
  }
  if (typeof mountPath !== 'string' || !mountPath.startsWith('/')) {
    req.add('config_file.mount_path', "config_file.mount_path must be an absolute directory path, starting with '/'");
  } else if (mountPath.split('/').includes('..')) {
    req.add('config_file.mount_path', "config_file.mount_path must not contain '..' segments");
  }
  if (content === undefined) req.add('config_file.content', "config_file.content is required: the file's content (it may be empty)");
  else if (typeof content !== 'string') req.add('config_file.content', `config_file.content must be a string, got ${kindOf(content)}`);
  return { filename: String(filename), mount_path: String(mountPath), content: String(content) };
}

export function validateGeneral(req: Req, ctx: ValidationContext, opts: Options): DeploymentDraft | undefined {
  const name = checkName(req, ctx, opts);
  const cluster = checkCluster(req, ctx);
  const hardware = checkTopLevelHardware(req, cluster, 'the hardware type of every replica');
  const preset = checkPreset(req);
  const image = checkImage(req);
  const tag = checkTag(req);
  const containerPort = checkContainerPort(req);
  const protocol = checkProtocol(req);
  const routingPolicy = checkRoutingPolicy(req, protocol);
  const healthPath = checkHealthPath(req);
  const registryUsername = checkRegistry(req, opts);
  const registryCredential = checkRegistryCredential(req, ctx, opts);
  const metrics = checkMetrics(req);
  const configFile = checkConfigFile(req);
  const scaling = checkScaling(req);
  const auth = checkAuth(req, ctx, opts);
  // A refused image or tag is reported on its own field; the environment is then judged as for a host command.
  const simulated = image !== undefined && resolveImage(ctx.images, image, tag).kind !== 'host';
  const environment = checkEnvironment(req, ctx, auth.token_value ?? undefined, opts, simulated);
  const annotations = checkAnnotations(req);
  const limits = checkLimits(req);
  const traffic = checkTraffic(req);
  const rolloutMode = checkRolloutMode(req);
  const command = req.strs('command') ?? [];
  checkRunnable(req, ctx, image, tag, command);
  if (req.problems.length > 0) return undefined;
  const spec: GeneralSpec = {
    family: 'general',
    preset,
    hardware_instance_id: need(hardware),
    image: need(image),
    tag,
    container_port: need(containerPort),
    protocol: need(protocol),
    health_check_path: healthPath,
    registry_username: registryUsername,
    registry_credential_id: registryCredential,
    enable_logging: req.bool('enable_logging') ?? true,
    enable_model_caching: req.bool('enable_model_caching') ?? false,
    session_affinity: req.bool('session_affinity') ?? false,
    routing_policy: need(routingPolicy),
    command,
    metrics_port: metrics.port,
    metrics_path: metrics.path,
    env: environment.env,
    config_file: configFile,
    annotations,
    secrets: {},
  };
  const registryPassword = plainSecret(req, 'registry_password');
  const plainSecrets = {
    ...(registryPassword === undefined ? {} : { registry_password: registryPassword }),
    ...secretEnvChanges(environment.secretEnv),
  };
  return {
    family: 'general',
    name: need(name),
    cluster_id: need(cluster).id,
    spec,
    plainSecrets,
    scaling: need(scaling),
    auth,
    limits,
    traffic: need(traffic),
    rollout_mode: need(rolloutMode),
  };
}
