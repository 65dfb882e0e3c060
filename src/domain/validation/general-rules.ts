// Owns the general-inference family: the user's own container (image, tag, port, health
// path, registry credentials, command, metrics target, config file) on top of the common
// rules, and the GeneralSpec draft they produce.

import { containerCapabilitiesProblem, normalizeCapabilities, type ContainerCapability } from '../container-capabilities.js';
import { resolveImage } from '../image-map.js';
import { findPreset, PRESETS } from '../presets.js';
import { credentialHostProblem } from '../registry-hosts.js';
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
import {
  CONTAINER_PORT_REQUIRED,
  configFilenameProblem,
  configMountPathProblem,
  healthPathProblem,
  IMAGE_REQUIRED,
  imageProblem,
  METRICS_PATH_MISSING,
  METRICS_PORT_MISSING,
  metricsPathProblem,
  portProblem,
  REGISTRY_CREDENTIAL_AND_PAIR,
  REGISTRY_PASSWORD_MISSING,
  REGISTRY_USERNAME_MISSING,
  tagProblem,
} from './field-rules.js';
import { checkRolloutMode, checkTraffic } from './traffic-rules.js';
import type { DeploymentDraft, Options, ValidationContext } from './types.js';

function checkImage(req: Req): string | undefined {
  if (!req.required('image', IMAGE_REQUIRED)) return undefined;
  const image = req.str('image');
  if (image === undefined) return undefined;
  const problem = imageProblem(image);
  if (problem) {
    req.add('image', problem);
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
  const problem = tagProblem(tag);
  if (problem) req.add('tag', problem);
  return tag;
}

function checkPort(req: Req, field: string, value: number): void {
  const problem = portProblem(field, value);
  if (problem) req.add(field, problem);
}

function checkContainerPort(req: Req): number | undefined {
  if (!req.required('container_port', CONTAINER_PORT_REQUIRED)) return undefined;
  const port = req.int('container_port');
  if (port !== undefined) checkPort(req, 'container_port', port);
  return port;
}

function checkHealthPath(req: Req): string {
  const path = req.str('health_check_path') ?? '/';
  const problem = healthPathProblem(path);
  if (problem) req.add('health_check_path', problem);
  return path;
}

const nonEmpty = (s: string | undefined): string | null => (s === undefined || s === '' ? null : s);

/**
 * registry_credential_id: credentials from the vault, instead of a username and password given
 * here — and only for an image on the registry host the credential is bound to.
 */
function checkRegistryCredential(req: Req, ctx: ValidationContext, opts: Options, image: string | undefined): number | null {
  const id = req.int('registry_credential_id') ?? null;
  if (id === null || req.isBad('registry_credential_id')) return null;
  const credential = ctx.registryCredentials?.get(id);
  if (credential === undefined) {
    req.add('registry_credential_id', `registry_credential_id ${id} is not in the vault (GET /vault/registry-credentials lists them)`);
  } else if (nonEmpty(req.str('registry_username')) !== null || secretWillBeSet(req, 'registry_password', opts)) {
    req.add('registry_credential_id', REGISTRY_CREDENTIAL_AND_PAIR);
  } else if (image !== undefined && opts.checkCredentialHost !== false) {
    const problem = credentialHostProblem(credential, image);
    if (problem) req.add('registry_credential_id', problem);
  }
  return id;
}

function checkRegistry(req: Req, opts: Options): string | null {
  const username = nonEmpty(req.str('registry_username'));
  const passwordSet = secretWillBeSet(req, 'registry_password', opts);
  if (username !== null && !passwordSet && !req.isBad('registry_password')) req.add('registry_password', REGISTRY_PASSWORD_MISSING);
  if (username === null && passwordSet && !req.isBad('registry_username')) req.add('registry_username', REGISTRY_USERNAME_MISSING);
  return username;
}

function checkMetrics(req: Req): { port: number | null; path: string | null } {
  const port = req.int('metrics_port') ?? null;
  const path = nonEmpty(req.str('metrics_path'));
  if (port !== null && path === null && !req.isBad('metrics_path')) req.add('metrics_path', METRICS_PATH_MISSING);
  if (port === null && path !== null && !req.isBad('metrics_port')) req.add('metrics_port', METRICS_PORT_MISSING);
  if (port !== null) checkPort(req, 'metrics_port', port);
  const pathProblem = path === null ? undefined : metricsPathProblem(path);
  if (pathProblem) req.add('metrics_path', pathProblem);
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
  const filenameProblem = configFilenameProblem(typeof filename === 'string' ? filename : '');
  if (filenameProblem) req.add('config_file.filename', filenameProblem);
  // A mount path that is not a string is refused as one that is not absolute.
  const mountProblem = configMountPathProblem(typeof mountPath === 'string' ? mountPath : '');
  if (mountProblem) req.add('config_file.mount_path', mountProblem);
  if (content === undefined) req.add('config_file.content', "config_file.content is required: the file's content (it may be empty)");
  else if (typeof content !== 'string') req.add('config_file.content', `config_file.content must be a string, got ${kindOf(content)}`);
  return { filename: String(filename), mount_path: String(mountPath), content: String(content) };
}

/** container_capabilities: which of the capabilities containers lose by default this deployment's keep. */
function checkCapabilities(req: Req): ContainerCapability[] {
  const names = req.strs('container_capabilities') ?? [];
  const problem = containerCapabilitiesProblem(names);
  if (problem) {
    req.add('container_capabilities', problem);
    return [];
  }
  return normalizeCapabilities(names as ContainerCapability[]);
}

export function validateGeneral(req: Req, ctx: ValidationContext, opts: Options): DeploymentDraft | undefined {
  const name = checkName(req, ctx, opts);
  const cluster = checkCluster(req, ctx);
  const hardware = checkTopLevelHardware(req, cluster);
  const preset = checkPreset(req);
  const image = checkImage(req);
  const tag = checkTag(req);
  const containerPort = checkContainerPort(req);
  const protocol = checkProtocol(req);
  const routingPolicy = checkRoutingPolicy(req, protocol);
  const healthPath = checkHealthPath(req);
  const registryUsername = checkRegistry(req, opts);
  const registryCredential = checkRegistryCredential(req, ctx, opts, image);
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
  const capabilities = checkCapabilities(req);
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
    container_capabilities: capabilities,
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
