// Owns the words the console uses for the control API's fields: one label per concept, used as
// the controls' labels by both create forms and Settings, and to say a problem in those words.
// The API (and the browser's copy of its rules) names fields as they go on the wire
// ("max_concurrency must be a positive integer", "env.FOO holds …"); the page shows "Target
// concurrency per replica must be a positive integer", "Environment variable FOO holds …".
// No imports: the root tsconfig (NodeNext) type-checks the unit tests that import this.

export type Labels = Readonly<Record<string, string>>;

/** The deployment forms' fields, both families. The API's field names stay what they are. */
export const FIELD_LABELS: Labels = {
  name: 'Endpoint Name',
  preset: 'Preset',
  image: 'Image',
  tag: 'Container Tag',
  container_port: 'Container Port',
  protocol: 'Protocol',
  health_check_path: 'Health check path',
  registry_credential_id: 'Registry credentials',
  registry_username: 'Image Registry Username',
  registry_password: 'Image Registry Password',
  command: 'Add command',
  enable_logging: 'Enable logging',
  enable_model_caching: 'Enable Model Caching',
  session_affinity: 'Session affinity',
  routing_policy: 'Routing policy',
  metrics_port: 'Metrics port',
  metrics_path: 'Metrics path',
  env: 'Environment variables',
  secret_env: 'Secret environment variables',
  config_file: 'Config file',
  container_capabilities: 'Container capabilities',
  'config_file.filename': 'Filename',
  'config_file.mount_path': 'Mount Path',
  'config_file.content': 'File Content',
  annotations: 'Annotations',
  cluster_id: 'Cluster',
  hardware_instance_id: 'Hardware type',
  serving_mode: 'Serving mode',
  model: 'Model',
  served_model_name: 'Served Model Name',
  model_hub_token: 'Model hub token',
  extra_args: 'Extra Arguments',
  min_replicas: 'Min Replicas',
  max_replicas: 'Max Replicas',
  // General deployments call it max_concurrency, orchestrated ones concurrency: one concept.
  max_concurrency: 'Target concurrency per replica',
  concurrency: 'Target concurrency per replica',
  cooldown_period: 'Cooldown Period (s)',
  autoscaling_metric: 'Autoscaling signal',
  autoscaling_target: 'Signal target',
  traffic: 'Traffic',
  rollout_mode: 'Rollout mode',
  endpoint_bearer_token: 'Endpoint token',
  endpoint_token_id: 'Endpoint token',
  private_endpoint: 'Make it a private endpoint?',
  client_certificate_id: 'Client certificate',
  max_request_body_bytes: 'Max request body (bytes)',
  first_response_timeout_seconds: 'First response timeout (s)',
  rate_limit: 'Rate limit',
  'rate_limit.requests_per_second': 'Requests per second',
  'rate_limit.tokens_per_minute': 'Tokens per minute',
  flow_control: 'Flow control',
  'flow_control.max_queue': 'Queue size',
  'flow_control.max_wait_seconds': 'Longest waits',
  'flow_control.max_wait_seconds.critical': 'Longest wait, critical (s)',
  'flow_control.max_wait_seconds.standard': 'Longest wait, standard (s)',
  'flow_control.max_wait_seconds.sheddable': 'Longest wait, sheddable (s)',
};

/** The heading of the endpoint's credentials (bearer token and client certificate) in every form. */
export const PROTECTION_LABEL = 'Endpoint protection';

/** Fields whose children are named by the user: `env.FOO` is "Environment variable FOO". */
const CHILDREN: Readonly<Record<string, string>> = {
  env: 'Environment variable',
  secret_env: 'Secret variable',
  annotations: 'Annotation',
};

/** Lists whose entries the API names by index: `traffic[1].percent` is "Traffic row 2 percent". */
const INDEXED: Readonly<Record<string, string>> = { traffic: 'Traffic row' };
const INDEXED_FIELD = /`?(?<![\w.])(traffic)\[(\d+)\](?:\.([a-z_]+))?`?/g;

/** Checkboxes: "private_endpoint: true" reads "“Make it a private endpoint?” checked". */
const CHECKBOXES = new Set(['private_endpoint', 'enable_logging', 'enable_model_caching', 'session_affinity']);

/** The label of a field, or of a child of a user-named field; the API's name when there is none. */
export function labelFor(field: string, labels: Labels = FIELD_LABELS): string {
  const own = labels[field];
  if (own !== undefined) return own;
  const dot = field.indexOf('.');
  if (dot > 0) {
    const child = CHILDREN[field.slice(0, dot)];
    if (child !== undefined && labels === FIELD_LABELS) return `${child} ${field.slice(dot + 1)}`;
  }
  return field;
}

/** A label inside a sentence: one that is a question is quoted, so the sentence still reads. */
const inSentence = (label: string): string => (label.endsWith('?') ? `“${label}”` : label);

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `message` with the API's field names in it replaced by their labels. Names that cannot be
 * English words (with `_` or `.`: max_replicas, env.FOO, rate_limit.tokens_per_minute) are
 * replaced wherever they stand; a one-word name (name, image, tag, model) only where the message
 * starts with it or quotes it in backticks, so "environment variable name" keeps its words. The
 * message then starts with a capital. `field`, the field the message is about when known: a
 * leading one-word name is then replaced only when it is that field (`tag "beta" would give …`
 * about `traffic[1].tag` keeps its word; Container Tag is another field).
 */
export function inLabels(message: string, labels: Labels = FIELD_LABELS, field?: string): string {
  if (labels === FIELD_LABELS) message = message.replace(INDEXED_FIELD, (_w: string, list: string, i: string, child: string | undefined) => `${INDEXED[list] ?? list} ${Number(i) + 1}${child ? ` ${child}` : ''}`);
  const keys = Object.keys(labels).sort((a, b) => b.length - a.length);
  if (keys.length === 0 || message === '') return message;
  const children = labels === FIELD_LABELS ? Object.keys(CHILDREN) : [];
  const alternatives = [...children.map((c) => `${escape(c)}\\.[A-Za-z0-9_]+`), ...keys.map(escape)].join('|');
  // Not inside a longer name (nor its dotted tail); "config_file." at a sentence's end still counts.
  const token = new RegExp(`(\`?)(?<![\\w.])(${alternatives})(?![\\w]|\\.\\w)\\1(: (?:true|false)\\b)?`, 'g');
  const out = message.replace(token, (whole: string, tick: string, name: string, flag: string | undefined, offset: number) => {
    const oneWord = !/[_.]/.test(name);
    if (oneWord && tick === '' && offset !== 0) return whole;
    if (oneWord && tick === '' && field !== undefined && field !== '' && field.split(/[.[]/)[0] !== name) return whole;
    const label = labelFor(name, labels);
    if (flag !== undefined && CHECKBOXES.has(name)) return `${inSentence(label)} ${flag.endsWith('true') ? 'checked' : 'unchecked'}`;
    return `${offset === 0 && !label.endsWith('?') ? label : inSentence(label)}${flag ?? ''}`;
  });
  return out.charAt(0).toUpperCase() + out.slice(1);
}

/** A form's problems, keyed by API field, each said with the labels. */
export function labelledProblems(problems: Readonly<Record<string, string>>, labels: Labels = FIELD_LABELS): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, message] of Object.entries(problems)) out[field] = inLabels(message, labels);
  return out;
}
