// Prints one plain closing line ("N passed, N failed, N skipped") after jest's own summary, for CI.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests, numFailedTests, numPendingTests, numTodoTests } = results;
    const line = `${numPassedTests} passed, ${numFailedTests} failed, ${numPendingTests + numTodoTests} skipped\n`;
    process.once('exit', () => process.stdout.write(`\n${line}`));
  }
}
module.exports = SummaryReporter;
