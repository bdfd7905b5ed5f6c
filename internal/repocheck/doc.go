// Package repocheck holds tests about the repository itself rather than
// one package: the layering of its rooms, that every fuzz target is run by
// make fuzz, that generated files are what their generators write today,
// and that the CLI stays thin (cmd/faster's size).
package repocheck
