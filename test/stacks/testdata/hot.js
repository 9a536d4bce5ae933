// SPDX-License-Identifier: Apache-2.0
// A JavaScript function the JIT compiles while it runs (on-stack replacement) for the
// seconds given: run with node --perf-basic-prof, its name reaches user stacks through
// /tmp/perf-PID.map. Called once, so that it cannot be inlined into its caller.
function hotLoopForThreadcap(until) {
	let total = 0;
	while (Date.now() < until)
		for (let i = 0; i < 100000; i++) total += i % 7;
	return total;
}
console.log(hotLoopForThreadcap(Date.now() + 1000 * Number(process.argv[2] || 10)) > 0 ? "done" : "done.");
