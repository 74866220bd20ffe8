// `conclave`: a command-line client of the Conclave API. Run it with `npm run conclave -- --help`
// or `bin/conclave.js --help`.
import { run } from './cli';

void run(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
  // Lets written output drain, then ends even if a keep-alive connection lingers.
  process.stdout.write('', () => process.exit(code));
});
