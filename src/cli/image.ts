// Owns `infergate image`: builds the reference engine's container image (infergate/engine:
// <version>, src/runtime/docker/engine-image.ts) from this installation through the Docker
// daemon DOCKER_HOST names, printing the daemon's progress and then `built <ref> (<n> MiB)`.
// A daemon that does not answer, a bad flag or a failed build is one line on stderr and exit
// code 1.

import { fileURLToPath } from 'node:url';
import { Flags, helpText, type Program } from '../flags/flags.js';
import { dockerAnswers, dockerClient } from '../runtime/docker/client.js';
import { buildEngineImage, engineImageRef } from '../runtime/docker/engine-image.js';
import { packageVersion } from './version.js';

class ImageCommandError extends Error {}

/** The installation: package.json, dist/, proto/ and node_modules/, next to src/ and dist/. */
const APP_DIR = fileURLToPath(new URL('../../', import.meta.url));

const USAGE = `usage: infergate image <command> [options]

the reference engine's container image, built through the Docker daemon (DOCKER_HOST, else
/var/run/docker.sock) from this installation, without pulling anything:
  build     build ${engineImageRef(packageVersion())} (needs dist/: npm run build)

infergate image build --help lists its flags.`;

const BUILD: Program = {
  name: 'image build',
  flags: [{ flag: 'tag', default: engineImageRef(packageVersion()), help: 'the image reference to build and tag' }],
  error: ImageCommandError,
};

function buildHelp(): string {
  return helpText(BUILD, {
    width: 6,
    intro: [
      'Builds the reference engine image FROM scratch: the Node binary running this command and',
      'the libraries it loads, /bin/sh and a few tools, and this installation with its production',
      'dependencies. Runs as uid 65534; the replica runtime starts it as `engine --flavor … --model …`.',
    ],
  });
}

function fail(message: string): never {
  process.stderr.write(`infergate image: error: ${message}\n`);
  process.exit(1);
}

export async function runImage(args: string[]): Promise<void> {
  const [command, ...rest] = args;
  switch (command) {
    case 'build':
      return runBuild(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE + '\n');
      return;
    default:
      fail(`unknown command "${command}" (see infergate image --help)`);
  }
}

async function runBuild(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(buildHelp() + '\n');
    return;
  }
  let ref: string;
  try {
    ref = Flags.parse(BUILD, args, process.env).required('tag');
  } catch (err) {
    if (err instanceof ImageCommandError) fail(err.message);
    throw err;
  }
  const docker = dockerClient();
  const answer = await dockerAnswers(docker);
  if (!answer.ok) fail(answer.reason);
  try {
    const built = await buildEngineImage(docker, { appDir: APP_DIR, ref, onProgress: (line) => process.stdout.write(line + '\n') });
    process.stdout.write(`built ${built.ref} (${(built.bytes / 1024 / 1024).toFixed(1)} MiB)\n`);
  } catch (err) {
    fail(err instanceof Error ? err.message : String(err));
  }
}
