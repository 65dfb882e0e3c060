// Bench helper: one autocannon run in a process of its own, so two loads measured at once (a
// flood and the client beside it) do not share an event loop, where each would delay the
// other's timing. Options come as one JSON argument; the result goes to stdout as JSON.

import autocannon from 'autocannon';

const options = JSON.parse(process.argv[2] ?? '{}') as autocannon.Options;
autocannon(options)
  .then((r) => process.stdout.write(JSON.stringify(r)))
  .catch((err: Error) => {
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 1;
  });
