package kernels

// RaceKernel is raceKernel for the external tests (schedule_test.go).
var RaceKernel = raceKernel
