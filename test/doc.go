// Package test holds the cross-package suites: conformance, invariants,
// end-to-end and chaos tests that need more than one top-level package.
// Tests of a single package sit beside that package instead.
package test
