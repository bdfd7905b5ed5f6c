// Package repocheck holds tests about the repository itself rather than
// one package: that every fuzz target is run by make fuzz, and that
// generated files are what their generators write today.
package repocheck
