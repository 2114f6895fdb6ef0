// Package lint holds checks on the module's own source that run as
// ordinary tests (go test ./internal/testkit/lint): TestFunctionLength keeps every
// function of the module within the length CONTRIBUTING.md sets
// ("Function length"), and TestLayers keeps the imports of internal/'s
// layers in their order ("Layers"). The package has no code of its own.
package lint
