//go:build tools

// Package tools pins the commands built from this module.
package tools

import (
	_ "github.com/coredns/coredns"
)
