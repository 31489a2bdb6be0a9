package main

import "github.com/e-agent/e/conformance"

// validator is the schema check applied to every server line.
func validator() conformance.LineValidator { return nil }
