//go:build !linux

package main

func syncFS() {}
