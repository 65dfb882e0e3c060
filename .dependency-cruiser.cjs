// The architecture's boundaries (docs/architecture.md), checked on every `npm test` by
// dependency-cruiser: which folder of src/ may import which. test/architecture.test.ts shows
// that each rule fails on a deliberate violation.

/** Node built-ins and packages that do I/O: the pure layers (domain/, core/) import none. */
const IO = '^(node:)?(fs|fs/promises|net|http|https|http2|tls|dgram|child_process|cluster|worker_threads)$|^(ioredis|undici|fastify|@fastify/.*|@grpc/.*|node-pty|pino)$';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import cycle anywhere in src/, type-only imports included: a cycle makes load order matter and layers meaningless, and a type cycle is the same tangle of concerns.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'pure-layers-no-io',
      severity: 'error',
      comment: 'domain/, core/, flags/ and balancer/ are pure: no file, network, process or framework I/O, and nothing of the layers above them.',
      from: { path: '^src/(domain|core|flags|balancer)/', pathNot: '\\.test\\.ts$' },
      to: { path: [IO, '^src/(store|pki|control|controller|runtime|autoscaler|gateway|net|metrics|engine|orchestrated|protocol|cli|config)/'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'control-plane-not-data-plane',
      severity: 'error',
      comment: 'The control API writes desired state and never starts a process or reads replica files: it reaches the runtime only through ports wired in cli/.',
      from: { path: '^src/control/', pathNot: '\\.test\\.ts$' },
      to: { path: '^src/(gateway|runtime|controller)/' },
    },
    {
      name: 'data-plane-not-control-plane',
      severity: 'error',
      comment: 'The gateway, the runtime and the controller never import the control API: they meet it in the store and domain/records.ts.',
      from: { path: '^src/(gateway|runtime|controller)/', pathNot: '\\.test\\.ts$' },
      to: { path: '^src/control/' },
    },
    {
      name: 'engines-stand-alone',
      severity: 'error',
      comment: 'The reference engine is a program of its own, replaceable by a real one: it imports only itself, the shared protocol code, and flags/ (command-line parsing, which knows nothing of the platform).',
      from: { path: '^src/(engine|protocol)/', pathNot: '\\.test\\.ts$' },
      to: { path: '^src/', pathNot: '^src/($1|protocol|flags)/' },
    },
    {
      name: 'frontend-stands-alone',
      severity: 'error',
      comment: 'The Frontend is a program of its own too: beyond itself it imports the shared protocol code, flags/, and the selection policies of balancer/ (it chooses workers as the gateway chooses replicas).',
      from: { path: '^src/orchestrated/', pathNot: '\\.test\\.ts$' },
      to: { path: '^src/', pathNot: '^src/(orchestrated|protocol|flags|balancer)/' },
    },
    {
      name: 'balancer-stands-alone',
      severity: 'error',
      comment: 'The selection policies are pure functions of replicas, load and the request, shared by the gateway and the Frontend: they import nothing of the platform but core/.',
      from: { path: '^src/balancer/', pathNot: '\\.test\\.ts$' },
      to: { path: '^src/', pathNot: '^src/(balancer|core)/' },
    },
    {
      name: 'request-path-knows-no-policy',
      severity: 'error',
      comment: 'A request at the gateway meets its selection policy only through the placement interface (balancer/selector.ts): the pipeline, the request context and the forwarders name no policy. Which policy a routing_policy means is wired once, in gateway.ts.',
      from: { path: '^src/gateway/(pipeline|request-context|candidates|http-forward|grpc-forward)\\.ts$' },
      to: { path: '^src/balancer/', pathNot: '^src/balancer/selector\\.ts$' },
    },
    {
      name: 'client-over-http-only',
      severity: 'error',
      comment: "The command-line client talks to the control API over HTTP like any other client: it imports only itself and the pure domain/ (the forecast of a change), never the service's parts.",
      from: { path: '^src/client/', pathNot: '\\.test\\.ts$' },
      to: { path: '^src/', pathNot: '^src/(client|domain)/' },
    },
    {
      name: 'cli-entry-loads-programs-lazily',
      severity: 'error',
      comment: "Every `infergate` command starts in src/cli/main.ts: it imports the programs (serve, engine, frontend, image, admin), the client and the service's error classes with import() when a command needs them, so `infergate ls` never loads fastify, the store or node-forge. Statically it imports only the version and the gateway worker's environment name.",
      from: { path: '^src/cli/main\\.ts$' },
      to: { path: '^src/', pathNot: '^src/cli/(version|gateway-worker-protocol)\\.ts$', dependencyTypesNot: ['dynamic-import', 'type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules|console)/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
