package main

import "syscall"

func syncFS() { syscall.Sync() }
