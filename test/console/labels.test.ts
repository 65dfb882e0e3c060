// Unit tests of the console's field labels (console/src/forms/labels.ts): one label per
// concept for both families, and problems from the API or the browser's rules said with the
// labels the page shows instead of the API's field names.

import { describe, expect, it } from 'vitest';
import { FIELD_LABELS, inLabels, labelFor, labelledProblems } from '../../console/src/forms/labels.js';
import { checkGeneral, checkOrchestrated, scalingProblems } from '../../console/src/forms/rules.js';

describe('field labels', () => {
  it('gives one label to one concept across the families', () => {
    expect(labelFor('max_concurrency')).toBe('Target concurrency per replica');
    expect(labelFor('concurrency')).toBe(labelFor('max_concurrency'));
    expect(labelFor('endpoint_token_id')).toBe(labelFor('endpoint_bearer_token'));
  });

  it('names a user-named child by its parent and its name, and falls back to the API name', () => {
    expect(labelFor('env.FOO')).toBe('Environment variable FOO');
    expect(labelFor('secret_env.API_KEY')).toBe('Secret variable API_KEY');
    expect(labelFor('annotations.team')).toBe('Annotation team');
    expect(labelFor('config_file.mount_path')).toBe('Mount Path');
    expect(labelFor('worker_pools.prefill.replicas')).toBe('worker_pools.prefill.replicas');
  });
});

describe('inLabels', () => {
  it('replaces the field a message starts with, and every multi-word field name in it', () => {
    expect(inLabels('max_concurrency must be a positive integer: the target number of in-flight requests per replica')).toBe(
      'Target concurrency per replica must be a positive integer: the target number of in-flight requests per replica',
    );
    expect(inLabels('max_replicas (2) must be at least min_replicas (3)')).toBe('Max Replicas (2) must be at least Min Replicas (3)');
    expect(inLabels('registry_username is required with registry_password: set both for a private registry, or neither')).toBe(
      'Image Registry Username is required with Image Registry Password: set both for a private registry, or neither',
    );
    expect(inLabels('rate_limit.requests_per_second must be a number above 0')).toBe('Requests per second must be a number above 0');
    expect(inLabels('first_response_timeout_seconds must be a whole number of seconds from 1 to 86400 (a day), got 0')).toBe(
      'First response timeout (s) must be a whole number of seconds from 1 to 86400 (a day), got 0',
    );
    expect(inLabels('flow_control.max_wait_seconds.sheddable must be a whole number of seconds from 0 to 3600, got 4000')).toBe(
      'Longest wait, sheddable (s) must be a whole number of seconds from 0 to 3600, got 4000',
    );
    expect(inLabels('config_file.filename is required: the name of the file to mount')).toBe('Filename is required: the name of the file to mount');
  });

  it('says a variable by its name', () => {
    expect(inLabels('env.FOO holds a service-account key, a platform credential')).toBe('Environment variable FOO holds a service-account key, a platform credential');
    expect(inLabels('secret_env.X must be a string (set or replace the variable) or null (remove it), got number')).toMatch(/^Secret variable X must be a string/);
  });

  it('leaves one-word names that are plain words inside a sentence, but replaces them quoted in backticks', () => {
    expect(inLabels('name must be at most 20 characters; "abcdefghijklmnopqrstu" has 21')).toBe('Endpoint Name must be at most 20 characters; "abcdefghijklmnopqrstu" has 21');
    expect(inLabels('environment variable name "1BAD" is invalid: names use letters')).toBe('Environment variable name "1BAD" is invalid: names use letters');
    expect(inLabels('image must be given without a tag or digest: put the tag in `tag`')).toBe('Image must be given without a tag or digest: put the tag in Container Tag');
  });

  it('does not touch a field name inside a longer one', () => {
    expect(inLabels('the max_concurrency_x field')).toBe('The max_concurrency_x field');
    expect(inLabels('unknown field "config_file.extra": a config file has filename, mount_path and content')).toBe(
      'Unknown field "config_file.extra": a config file has filename, mount_path and content',
    );
  });

  it('quotes a label that is a question, and reads a checkbox set to true or false', () => {
    expect(inLabels('set private_endpoint: true to issue a client certificate')).toBe('Set “Make it a private endpoint?” checked to issue a client certificate');
    expect(inLabels('private_endpoint must be a boolean')).toBe('“Make it a private endpoint?” must be a boolean');
  });

  it('takes a page’s own table: the vault’s name is the token name', () => {
    expect(inLabels('name must match pattern "^[A-Za-z0-9._-]+$"', { name: 'Token name' })).toBe('Token name must match pattern "^[A-Za-z0-9._-]+$"');
    expect(labelledProblems({ password: 'password is a service-account key' }, { password: 'Registry password' })).toEqual({ password: 'Registry password is a service-account key' });
  });

  it('leaves a message naming no field as it is, with a capital', () => {
    expect(inLabels('every endpoint must be protected')).toBe('Every endpoint must be protected');
    expect(inLabels('')).toBe('');
  });

  it('says every problem the browser finds with the labels: no API field name is left in the messages', () => {
    const general = checkGeneral(
      {
        name: 'x'.repeat(21),
        cluster_id: 1,
        hardware_instance_id: 1,
        image: 'a b',
        container_port: 0,
        health_check_path: 'health',
        registry_username: 'me',
        metrics_port: 9100,
        min_replicas: 2,
        max_replicas: 1,
        max_concurrency: 0,
        cooldown_period: 4000,
        endpoint_bearer_token: 'short',
        config_file: { filename: 'a/b', mount_path: 'etc', content: '' },
        max_request_body_bytes: 1,
        first_response_timeout_seconds: 0,
        rate_limit: { requests_per_second: 0, tokens_per_minute: 0 },
        flow_control: { max_queue: -1, max_wait_seconds: { critical: 4000, standard: -1, sheddable: 3601 } },
      },
      { mode: 'create', tokenBound: true },
    );
    const orchestrated = { ...checkOrchestrated({ name: 'o', cluster_id: 1, hardware_instance_id: 1, model: 'bad', served_model_name: ' ', private_endpoint: true }, { mode: 'create', tokenBound: false }), ...scalingProblems('orchestrated', { min_replicas: 1, max_replicas: 3 }, null) };
    const wireNames = Object.keys(FIELD_LABELS).filter((k) => /[_.]/.test(k));
    for (const message of Object.values(labelledProblems({ ...general, ...orchestrated }))) {
      for (const wire of wireNames) expect(message).not.toContain(wire);
    }
    expect(labelledProblems(orchestrated).concurrency).toMatch(/^Target concurrency per replica is required when Max Replicas \(3\) > Min Replicas \(1\)/);
  });
});
