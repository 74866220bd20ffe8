'use strict';
/**
 * Preloaded into a process by the benchmark (NODE_OPTIONS=--require …/cpu-profile.js, because
 * --cpu-prof is not allowed in NODE_OPTIONS): the first SIGWINCH starts V8's sampling CPU profiler,
 * the second writes the profile (.cpuprofile JSON) to BENCH_CPU_PROFILE. Only the window between
 * the two signals is profiled, so start-up (ts-node compiling the sources) stays out of it.
 */
const inspector = require('node:inspector');
const fs = require('node:fs');

const target = process.env.BENCH_CPU_PROFILE;
if (target) {
  const session = new inspector.Session();
  session.connect();
  let running = false;
  process.on('SIGWINCH', () => {
    if (!running) {
      running = true;
      session.post('Profiler.enable', () =>
        session.post('Profiler.setSamplingInterval', { interval: 1000 }, () =>
          session.post('Profiler.start'),
        ),
      );
      return;
    }
    running = false;
    session.post('Profiler.stop', (error, result) => {
      if (error) fs.writeFileSync(`${target}.error`, String(error));
      else fs.writeFileSync(target, JSON.stringify(result.profile));
    });
  });
}
