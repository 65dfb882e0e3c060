// Owns the examples under every command's --help (a test checks that none is missing) and
// how a command is named by its path under the program.

import type { Command } from 'commander';

/** Every command's examples, shown under its --help; a test checks none is missing. */
export const EXAMPLES: Record<string, string[]> = {
  login: ['infergate login --api http://127.0.0.1:8080 --key-file data/admin.key', 'echo "$KEY" | infergate login --api https://infergate.example.com:8443 --context prod', 'infergate login --sso --api https://infergate.example.com:8443'],
  whoami: ['infergate whoami', 'infergate --context prod whoami -o json'],
  apply: ['infergate apply -f deployments.yaml --wait', 'infergate apply -f deployments.yaml --dry-run', 'infergate apply -f chat.yaml --replace-secrets'],
  diff: ['infergate diff -f deployments.yaml', 'infergate diff -f chat.yaml --replace-secrets'],
  create: ['infergate create -f chat.yaml --wait'],
  ls: ['infergate ls', 'infergate ls -o name', 'infergate ls --family general --chunk-size 100', 'infergate ls --limit 50', 'infergate ls --limit 50 --continue "$TOKEN" -o json'],
  get: ['infergate get chat -o yaml'],
  describe: ['infergate describe chat'],
  delete: ['infergate delete chat --wait'],
  pause: ['infergate pause chat'],
  resume: ['infergate resume chat'],
  rollback: ['infergate rollback chat', 'infergate rollback chat --to 1'],
  clone: ['infergate clone chat chat-canary --token "$NEW_TOKEN"', 'infergate clone chat chat-canary --token-id 3'],
  scale: ['infergate scale chat --min 2 --max 6', 'infergate scale chat --autoscaling-metric queue_depth --autoscaling-target 4', 'infergate scale chat --autoscaling-metric ttft --autoscaling-target 800'],
  traffic: [
    'infergate traffic chat',
    'infergate traffic chat rev3=90 rev4=10 --tag rev4=canary',
    'infergate traffic chat rev3=50 latest=50',
    'infergate traffic chat --rollout-mode manual',
    'infergate traffic chat --reset',
  ],
  promote: ['infergate promote chat', 'infergate promote chat rev3'],
  revisions: ['infergate revisions chat'],
  logs: ['infergate logs chat -f', 'infergate logs chat --component Worker --tail 20'],
  exec: ['infergate exec chat', 'infergate exec chat -- env'],
  wait: ['infergate wait chat --for ready --timeout 600', 'infergate wait chat --for deleted'],
  usage: ['infergate usage chat', 'infergate usage chat --from 2026-11-01T00:00:00Z -o json'],
  tokens: ['infergate tokens ls'],
  'tokens create': ['infergate tokens create chat-clients', 'infergate tokens create nightly-batch --max-priority sheddable'],
  'tokens ls': ['infergate tokens ls -o json'],
  'tokens rm': ['infergate tokens rm 3'],
  'tokens update': ['infergate tokens update 3 --max-priority standard', 'infergate tokens update 3 --max-priority none'],
  'registry-credentials': ['infergate registry-credentials ls'],
  'registry-credentials create': [
    'printf %s "$REGISTRY_PASSWORD" | infergate registry-credentials create team-registry --username team --registry registry.example.com:5000 --password-stdin',
    'infergate registry-credentials create ngc --username \'$oauthtoken\' --registry nvcr.io --password-file ngc-api-key.txt',
  ],
  'registry-credentials bind': ['infergate registry-credentials bind team-registry registry.example.com:5000'],
  'registry-credentials ls': ['infergate registry-credentials ls -o yaml'],
  'registry-credentials get': ['infergate registry-credentials get team-registry', 'infergate registry-credentials get 2 -o json'],
  'registry-credentials rm': ['infergate registry-credentials rm team-registry'],
  certs: ['infergate certs ls'],
  'certs create': ['infergate certs create billing-service', 'infergate certs create reports --deployment 7 --max-priority sheddable', 'infergate certs create legacy-java --key-type rsa-2048'],
  'certs ls': ['infergate certs ls'],
  'certs pem': ['infergate certs pem 2 > billing-service.pem'],
  'certs revoke': ['infergate certs revoke 2'],
  'certs update': ['infergate certs update 2 --max-priority critical'],
  'service-accounts': ['infergate service-accounts ls'],
  'service-accounts create': ['infergate --project team-a service-accounts create ci --role developer', 'infergate service-accounts create ops --role admin'],
  'service-accounts ls': ['infergate service-accounts ls'],
  'service-accounts rm': ['infergate service-accounts rm 4'],
  projects: ['infergate projects', 'infergate projects -o json'],
  'projects ls': ['infergate projects ls'],
  'projects create': ['infergate projects create team-a --gpu-quota 16'],
  'projects quota': ['infergate projects quota team-a 32', 'infergate projects quota team-a none'],
  'projects rm': ['infergate projects rm team-a'],
  members: ['infergate members', 'infergate --project team-a members ls'],
  'members ls': ['infergate members ls -o json'],
  'members add': ['infergate members add user:alice@example.com --role developer', 'infergate --project team-a members add group:ml-platform --role owner'],
  'members rm': ['infergate members rm user:alice@example.com'],
  context: ['infergate context set-project team-a'],
  'context set-project': ['infergate context set-project team-a', 'infergate --context prod context set-project'],
  audit: ['infergate audit', 'infergate audit --result refused --since 1h', 'infergate --project team-a audit --actor alice@example.com -o json', 'infergate audit --all-projects --action deployment.manage --limit 50'],
  clusters: ['infergate clusters'],
  presets: ['infergate presets -o yaml'],
  completion: ['infergate completion bash > /etc/bash_completion.d/infergate', 'infergate completion zsh > "${fpath[1]}/_infergate"', 'source <(infergate completion bash)'],
  // Hidden: what the completion scripts call on <Tab>.
  __complete: ['infergate __complete deployments ch', 'infergate __complete contexts'],
};

/** The command's path under the program: "tokens create". */
export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c !== null && c.parent !== null; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

export function addExamples(cmd: Command): void {
  for (const sub of cmd.commands) {
    const lines = EXAMPLES[commandPath(sub)];
    if (lines) sub.addHelpText('after', `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`);
    addExamples(sub);
  }
}

