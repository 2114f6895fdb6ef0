// Package terminaltest holds the tests that drive the agentctx binary on a
// pseudo-terminal, as a person at a terminal meets it: the hint while it
// waits on stdin, Ctrl-C, the progress bar. It has no code of its own. The
// tests live here rather than beside package main because a test binary
// links the package it tests: these run the built binary as a child
// process, so linking the whole command into their test binary as well
// would only cost time on every test run.
package terminaltest
