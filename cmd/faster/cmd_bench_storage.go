package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/bench"
	"github.com/faster-training/faster/internal/blkio"
)

type benchStorageOptions struct {
	rows    []string
	classes string
	engines []string
	epochs  int
	workers int
	batch   int
	json    bool

	noWarmup bool
}

// storageClass is one column group of the table: a throttle, or none.
type storageClass struct {
	Name   string       `json:"name"`
	Limits blkio.Limits `json:"limits"`
	Drop   bool         `json:"evicted"` // the data evicted from the page cache before each run
}

// storageRow is one dataset of the table.
type storageRow struct {
	ID, Path string
	Flags    []string // extra flags for faster bench load
}

// storageEngine is one loader measured in every cell of its rows.
type storageEngine struct {
	Name string
	Rows map[string]bool // nil: every row
	Cmd  string          // shell command with {faster} {path} {flags} {epochs} {workers} {batch}
}

// storageCell is one measurement.
type storageCell struct {
	Row          string  `json:"row"`
	Path         string  `json:"path"`
	Class        string  `json:"class"`
	Engine       string  `json:"engine"`
	Seconds      float64 `json:"seconds"`
	Images       int64   `json:"images"`
	ImagesPerSec float64 `json:"images_per_sec"`
	// DeviceMB and DeviceMBPerSec are what the engine's processes read
	// from the disk (the group's kernel counters), whatever the engine
	// reports itself; DeviceReads the read requests.
	DeviceMB       float64 `json:"device_mb"`
	DeviceMBPerSec float64 `json:"device_mb_per_sec"`
	DeviceReads    int64   `json:"device_reads"`
	// EngineVerdict is the engine's own bottleneck (faster bench load's
	// io / decode / consumer), if it reports one.
	EngineVerdict string `json:"engine_verdict,omitempty"`
	// Throttled is true when the device ran at 80% or more of the class's
	// byte or request limit: the storage limited the run.
	Throttled bool   `json:"throttled"`
	Verdict   string `json:"verdict"` // the engine's, else io when Throttled, else cpu
	Error     string `json:"error,omitempty"`
}

const defaultStorageEngine = `{faster} bench load {path} --json --epochs {epochs} --workers {workers} --batch {batch} {flags}`

func init() {
	benchCommands = append(benchCommands, func(stdout, stderr io.Writer) *cobra.Command {
		var o benchStorageOptions
		c := &cobra.Command{
			Use:   "storage ROW...",
			Short: "The loading benchmark on simulated storage (HDD, SSD) through the kernel's block-IO throttle",
			Long: `Storage runs loaders over datasets as if they lived on slower storage: each
storage class is a cgroup with the kernel's block-IO read throttle (cgroup v1
blkio.throttle, or v2 io.max) on the disk that holds the data, and the
dataset's pages are evicted from the page cache before every run (the
loaders' own binaries and libraries stay cached), so every byte of data comes
from the throttled device. Needs root and the blkio (v1) or io (v2) controller.

Each ROW is ID=PATH, optionally followed by flags for faster bench load after
commas: "imagefolder=/data/tree", "shards-global=/data/shards,--global-shuffle".

--class takes a comma-separated list of storage classes: hdd (150 reads/s,
120 MB/s), ssd (20,000 reads/s, 500 MB/s), disk (data evicted from the cache, no throttle),
cache (page cache warm, no throttle), or NAME:BPS:IOPS (BPS with k/M/G
suffixes, 0 = unlimited).

--engine NAME=COMMAND adds a loader to compare (repeatable; the default is our
own, "faster bench load", also named by --engine faster=); NAME@ID+ID=COMMAND
runs it on those rows only.
COMMAND is a shell command with {faster} {path} {flags} {epochs} {workers}
{batch} replaced, and must print a JSON object with images_per_sec (and
seconds, images; a bottleneck if it names one) as its last line.

Before the table, each engine runs once unthrottled (discarded), so that its
binary, interpreter and libraries are cached and only the data meets the
throttle (--no-warmup to skip).

Each cell reports images/s, the MB/s the device served (the cgroup's own
counters), and the verdict: the engine's own (io, decode, consumer) if it names
one, else io when the device ran at 80% of a throttle limit, else cpu.

Exit status: 0 done; 1 failed (throttle unavailable, an engine failed); 2 usage error; 130 interrupted.`,
			Args: minArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				o.rows = args
				return runBenchStorage(cmd.Context(), o, stdout, stderr)
			},
		}
		f := c.Flags()
		f.StringVar(&o.classes, "class", "hdd,ssd", "storage classes: hdd, ssd, disk, cache or NAME:BPS:IOPS")
		f.StringArrayVar(&o.engines, "engine", nil, "NAME[@ROW+ROW]=COMMAND: a loader to compare (default: faster bench load)")
		f.IntVar(&o.epochs, "epochs", 1, "epochs per run")
		f.IntVar(&o.workers, "workers", 1, "decode workers per run")
		f.IntVar(&o.batch, "batch", 64, "batch size")
		f.BoolVar(&o.noWarmup, "no-warmup", false, "skip the unthrottled warm-up run of each engine")
		f.BoolVar(&o.json, "json", false, "print JSON")
		return c
	})
}

func parseStorageClasses(s string) ([]storageClass, error) {
	var out []storageClass
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "hdd":
			out = append(out, storageClass{Name: name, Limits: blkio.HDD, Drop: true})
		case "ssd":
			out = append(out, storageClass{Name: name, Limits: blkio.SSD, Drop: true})
		case "disk":
			out = append(out, storageClass{Name: name, Drop: true})
		case "cache":
			out = append(out, storageClass{Name: name})
		default:
			f := strings.Split(name, ":")
			if len(f) != 3 || f[0] == "" {
				return nil, usagef("--class %q: want hdd, ssd, disk, cache or NAME:BPS:IOPS", name)
			}
			bps, err1 := parseSize(f[1])
			iops, err2 := strconv.ParseInt(f[2], 10, 64)
			if err1 != nil || err2 != nil || bps < 0 || iops < 0 {
				return nil, usagef("--class %q: BPS and IOPS must be counts (k/M/G suffixes for BPS)", name)
			}
			out = append(out, storageClass{Name: f[0], Limits: blkio.Limits{ReadBPS: bps, ReadIOPS: iops}, Drop: true})
		}
	}
	return out, nil
}

// parseSize reads a byte count with an optional k, M or G suffix (powers
// of 1000, as disk rates are quoted).
func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1e9, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

func parseStorageRows(args []string) ([]storageRow, error) {
	var out []storageRow
	seen := map[string]bool{}
	for _, a := range args {
		id, rest, ok := strings.Cut(a, "=")
		if !ok || id == "" || rest == "" || seen[id] {
			return nil, usagef("row %q: want a unique ID=PATH[,--flag...]", a)
		}
		seen[id] = true
		parts := strings.Split(rest, ",")
		out = append(out, storageRow{ID: id, Path: parts[0], Flags: parts[1:]})
	}
	return out, nil
}

func parseStorageEngines(specs []string, rows []storageRow) ([]storageEngine, error) {
	if len(specs) == 0 {
		return []storageEngine{{Name: "faster bench load", Cmd: defaultStorageEngine}}, nil
	}
	ids := map[string]bool{}
	for _, r := range rows {
		ids[r.ID] = true
	}
	var out []storageEngine
	for _, s := range specs {
		head, cmd, ok := strings.Cut(s, "=")
		name, _, _ := strings.Cut(head, "@")
		builtin := name == "faster" || name == "default"
		if !ok || head == "" || (strings.TrimSpace(cmd) == "" && !builtin) {
			return nil, usagef("--engine %q: want NAME[@ROW+ROW]=COMMAND", s)
		}
		e := storageEngine{Name: head, Cmd: cmd}
		if name, only, ok := strings.Cut(head, "@"); ok {
			e.Name, e.Rows = name, map[string]bool{}
			for _, id := range strings.Split(only, "+") {
				if !ids[id] {
					return nil, usagef("--engine %q: no row %q", s, id)
				}
				e.Rows[id] = true
			}
		}
		if builtin {
			e.Name, e.Cmd = "faster bench load", defaultStorageEngine
		}
		out = append(out, e)
	}
	return out, nil
}

func runBenchStorage(ctx context.Context, o benchStorageOptions, stdout, stderr io.Writer) error {
	if o.epochs < 1 || o.workers < 0 || o.batch < 1 {
		return usagef("--epochs and --batch must be at least 1, --workers not negative")
	}
	classes, err := parseStorageClasses(o.classes)
	if err != nil {
		return err
	}
	rows, err := parseStorageRows(o.rows)
	if err != nil {
		return err
	}
	engines, err := parseStorageEngines(o.engines, rows)
	if err != nil {
		return err
	}
	if err := blkio.Available(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	devs := map[string]string{}
	for _, r := range rows {
		if _, err := os.Stat(r.Path); err != nil {
			return err
		}
		if devs[r.ID], err = blkio.DeviceOf(r.Path); err != nil {
			return err
		}
	}
	if !o.noWarmup {
		// One unthrottled, discarded run of each engine on its first row,
		// so its binary, interpreter and libraries are in the page cache
		// and the throttle meets the data only.
		g, err := blkio.NewGroup(fmt.Sprintf("faster-bench-%d-warmup", os.Getpid()))
		if err != nil {
			return err
		}
		for _, e := range engines {
			for _, r := range rows {
				if e.Rows == nil || e.Rows[r.ID] {
					fmt.Fprintf(stderr, "faster: bench storage: warm-up run of %s on %s\n", e.Name, r.ID)
					runStorageCell(ctx, g, storageClass{Name: "warmup"}, r, devs[r.ID], e, self, o, stderr)
					break
				}
			}
		}
		g.Remove()
	}
	var cells []storageCell
	for _, cl := range classes {
		g, err := blkio.NewGroup(fmt.Sprintf("faster-bench-%d-%s", os.Getpid(), cl.Name))
		if err != nil {
			return err
		}
		for _, r := range rows {
			for _, e := range engines {
				if e.Rows != nil && !e.Rows[r.ID] {
					continue
				}
				if ctx.Err() != nil {
					g.Remove()
					return ctx.Err()
				}
				c := runStorageCell(ctx, g, cl, r, devs[r.ID], e, self, o, stderr)
				cells = append(cells, c)
			}
		}
		if err := g.Remove(); err != nil {
			fmt.Fprintf(stderr, "faster: %v\n", err)
		}
	}
	if o.json {
		return writeJSON(stdout, map[string]any{"classes": classes, "cells": cells})
	}
	return storageTable(stdout, classes, rows, engines, cells)
}

func runStorageCell(ctx context.Context, g *blkio.Group, cl storageClass, r storageRow, dev string, e storageEngine,
	self string, o benchStorageOptions, stderr io.Writer) storageCell {
	c := storageCell{Row: r.ID, Path: r.Path, Class: cl.Name, Engine: e.Name}
	fail := func(err error) storageCell {
		c.Error = err.Error()
		fmt.Fprintf(stderr, "faster: bench storage: %s on %s (%s): %v\n", e.Name, r.ID, cl.Name, err)
		return c
	}
	if err := g.Limit(dev, cl.Limits); err != nil {
		return fail(err)
	}
	if cl.Drop {
		if _, err := blkio.Evict(r.Path); err != nil {
			return fail(err)
		}
	} else if err := warm(r.Path); err != nil {
		return fail(err)
	}
	before, err := g.Stats(dev)
	if err != nil {
		return fail(err)
	}
	repl := strings.NewReplacer("{faster}", shellQuote(self), "{path}", shellQuote(r.Path),
		"{flags}", strings.Join(quoteAll(r.Flags), " "), "{epochs}", strconv.Itoa(o.epochs),
		"{workers}", strconv.Itoa(o.workers), "{batch}", strconv.Itoa(o.batch))
	cmd := g.Command(ctx, "/bin/sh", "-c", repl.Replace(e.Cmd))
	cmd.Env = append(os.Environ(), benchChildEnv+"=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fail(fmt.Errorf("%v: %s", err, lastLines(errOut.String(), 3)))
	}
	wall := time.Since(start).Seconds()
	after, err := g.Stats(dev)
	if err != nil {
		return fail(err)
	}
	var res struct {
		Seconds      float64 `json:"seconds"`
		Images       int64   `json:"images"`
		ImagesPerSec float64 `json:"images_per_sec"`
		Bottleneck   string  `json:"bottleneck"`
	}
	if err := json.Unmarshal(lastJSON(out.Bytes()), &res); err != nil || res.ImagesPerSec <= 0 {
		return fail(fmt.Errorf("no JSON with images_per_sec on its last line (%v): %s", err, lastLines(out.String(), 2)))
	}
	c.Seconds, c.Images, c.ImagesPerSec, c.EngineVerdict = res.Seconds, res.Images, res.ImagesPerSec, res.Bottleneck
	if c.Seconds <= 0 {
		c.Seconds = wall
	}
	bytesRead, reads := after.ReadBytes-before.ReadBytes, after.Reads-before.Reads
	c.DeviceMB, c.DeviceReads = float64(bytesRead)/1e6, reads
	c.DeviceMBPerSec = mbPerSec(bytesRead, c.Seconds)
	c.Throttled = saturated(cl.Limits, bytesRead, reads, c.Seconds)
	c.Verdict = c.EngineVerdict
	if c.Verdict == "" {
		c.Verdict = "cpu"
		if c.Throttled {
			c.Verdict = "io"
		}
	}
	return c
}

// saturated reports whether a run used 80% or more of a limit.
func saturated(l blkio.Limits, bytes, reads int64, seconds float64) bool {
	if seconds <= 0 {
		return false
	}
	return (l.ReadBPS > 0 && float64(bytes)/seconds >= 0.8*float64(l.ReadBPS)) ||
		(l.ReadIOPS > 0 && float64(reads)/seconds >= 0.8*float64(l.ReadIOPS))
}

// warm reads every file under path once, so a "cache" run reads memory.
func warm(path string) error {
	return filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(io.Discard, f)
		return err
	})
}

func lastJSON(out []byte) []byte {
	// An engine may print progress lines before its summary; faster's own
	// --json summary is one indented object: take from the last line that
	// opens an object at column 0.
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if bytes.HasPrefix(lines[i], []byte("{")) {
			return bytes.Join(lines[i:], []byte("\n"))
		}
	}
	return nil
}

func lastLines(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = shellQuote(s)
	}
	return out
}

func storageTable(w io.Writer, classes []storageClass, rows []storageRow, engines []storageEngine, cells []storageCell) error {
	header := []string{"data", "storage"}
	for _, e := range engines {
		header = append(header, e.Name)
	}
	find := func(r, cl, e string) *storageCell {
		for i := range cells {
			if cells[i].Row == r && cells[i].Class == cl && cells[i].Engine == e {
				return &cells[i]
			}
		}
		return nil
	}
	var table [][]string
	for _, r := range rows {
		for _, cl := range classes {
			line := []string{r.ID, cl.Name}
			for _, e := range engines {
				c := find(r.ID, cl.Name, e.Name)
				switch {
				case c == nil:
					line = append(line, "—")
				case c.Error != "":
					line = append(line, "failed")
				default:
					line = append(line, fmt.Sprintf("%.1f MB/s · %.0f img/s · %s", c.DeviceMBPerSec, c.ImagesPerSec, c.Verdict))
				}
			}
			table = append(table, line)
		}
	}
	return bench.Table(w, header, table)
}
