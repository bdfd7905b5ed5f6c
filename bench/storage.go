package bench

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

	"github.com/faster-training/faster/internal/blkio"
)

// The storage benchmark (`faster bench storage`): loaders over datasets as
// if they lived on slower storage, each storage class a cgroup with the
// kernel's block-IO read throttle, the data evicted from the page cache
// before every run.

// StorageClass is one column group of the table: a throttle, or none.
type StorageClass struct {
	Name   string       `json:"name"`
	Limits blkio.Limits `json:"limits"`
	Drop   bool         `json:"evicted"` // the data evicted from the page cache before each run
}

// StorageRow is one dataset of the table.
type StorageRow struct {
	ID, Path string
	Flags    []string // extra flags for the engine's {flags}
}

// StorageEngine is one loader measured in every cell of its rows.
type StorageEngine struct {
	Name string
	Rows map[string]bool // nil: every row
	Cmd  string          // shell command with {faster} {path} {flags} {epochs} {workers} {batch}
}

// StorageCell is one measurement.
type StorageCell struct {
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

// StorageReport is the benchmark's result (`faster bench storage --json`).
type StorageReport struct {
	Cells   []StorageCell  `json:"cells"`
	Classes []StorageClass `json:"classes"`
}

// DefaultStorageEngine is our own loader, `faster bench load`.
var DefaultStorageEngine = StorageEngine{Name: "faster bench load",
	Cmd: `{faster} bench load {path} --json --epochs {epochs} --workers {workers} --batch {batch} {flags}`}

// GPUStorageEngine is our loader decoding on a GPU (the study's DALI GPU
// column): `faster bench load --device cuda[:N]`, the builtin engine named
// faster-cuda or faster-cuda:N (ok false for any other name).
func GPUStorageEngine(name string) (e StorageEngine, ok bool) {
	dev, ok := strings.CutPrefix(name, "faster-")
	if !ok || (dev != "cuda" && !strings.HasPrefix(dev, "cuda:")) {
		return StorageEngine{}, false
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(dev, "cuda:")); dev != "cuda" && (err != nil || n < 0) {
		return StorageEngine{}, false
	}
	return StorageEngine{Name: DefaultStorageEngine.Name + " --device " + dev, Cmd: DefaultStorageEngine.Cmd + " --device " + dev}, true
}

// StorageConfig is one `faster bench storage`.
type StorageConfig struct {
	Rows    []StorageRow
	Classes []StorageClass
	Engines []StorageEngine
	// Epochs, Workers and Batch replace {epochs}, {workers} and {batch}.
	Epochs, Workers, Batch int
	// NoWarmup skips the unthrottled, discarded first run of each engine.
	NoWarmup bool
	// Faster is the faster binary ({faster}); Env the engines'
	// environment (nil: this process's).
	Faster string
	Env    []string
	// Log gets the progress and each failed cell's error (nil: discarded).
	Log io.Writer
}

// ParseStorageClasses reads a comma-separated list of storage classes:
// hdd, ssd, disk, cache or NAME:BPS:IOPS.
func ParseStorageClasses(s string) ([]StorageClass, error) {
	var out []StorageClass
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "hdd":
			out = append(out, StorageClass{Name: name, Limits: blkio.HDD, Drop: true})
		case "ssd":
			out = append(out, StorageClass{Name: name, Limits: blkio.SSD, Drop: true})
		case "disk":
			out = append(out, StorageClass{Name: name, Drop: true})
		case "cache":
			out = append(out, StorageClass{Name: name})
		default:
			f := strings.Split(name, ":")
			if len(f) != 3 || f[0] == "" {
				return nil, fmt.Errorf("%q: want hdd, ssd, disk, cache or NAME:BPS:IOPS", name)
			}
			bps, err1 := parseSize(f[1])
			iops, err2 := strconv.ParseInt(f[2], 10, 64)
			if err1 != nil || err2 != nil || bps < 0 || iops < 0 {
				return nil, fmt.Errorf("%q: BPS and IOPS must be counts (k/M/G suffixes for BPS)", name)
			}
			out = append(out, StorageClass{Name: f[0], Limits: blkio.Limits{ReadBPS: bps, ReadIOPS: iops}, Drop: true})
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

// ParseStorageRows reads rows given as ID=PATH[,--flag...], IDs unique.
func ParseStorageRows(args []string) ([]StorageRow, error) {
	var out []StorageRow
	seen := map[string]bool{}
	for _, a := range args {
		id, rest, ok := strings.Cut(a, "=")
		if !ok || id == "" || rest == "" || seen[id] {
			return nil, fmt.Errorf("row %q: want a unique ID=PATH[,--flag...]", a)
		}
		seen[id] = true
		parts := strings.Split(rest, ",")
		out = append(out, StorageRow{ID: id, Path: parts[0], Flags: parts[1:]})
	}
	return out, nil
}

// ParseStorageEngines reads engines given as NAME[@ROW+ROW]=COMMAND (NAME
// faster or default with no command: DefaultStorageEngine); none given is
// DefaultStorageEngine alone.
func ParseStorageEngines(specs []string, rows []StorageRow) ([]StorageEngine, error) {
	if len(specs) == 0 {
		return []StorageEngine{DefaultStorageEngine}, nil
	}
	ids := map[string]bool{}
	for _, r := range rows {
		ids[r.ID] = true
	}
	var out []StorageEngine
	for _, s := range specs {
		head, cmd, ok := strings.Cut(s, "=")
		name, _, _ := strings.Cut(head, "@")
		gpu, isGPU := GPUStorageEngine(name)
		builtin := name == "faster" || name == "default" || isGPU
		if !ok || head == "" || (strings.TrimSpace(cmd) == "" && !builtin) {
			return nil, fmt.Errorf("%q: want NAME[@ROW+ROW]=COMMAND", s)
		}
		e := StorageEngine{Name: head, Cmd: cmd}
		if name, only, ok := strings.Cut(head, "@"); ok {
			e.Name, e.Rows = name, map[string]bool{}
			for _, id := range strings.Split(only, "+") {
				if !ids[id] {
					return nil, fmt.Errorf("%q: no row %q", s, id)
				}
				e.Rows[id] = true
			}
		}
		if builtin {
			e.Name, e.Cmd = DefaultStorageEngine.Name, DefaultStorageEngine.Cmd
			if isGPU {
				e.Name, e.Cmd = gpu.Name, gpu.Cmd
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// Storage runs every engine on every row in every class. A cell that
// fails is kept with its Error (and told to Log); the benchmark fails only
// when the throttle cannot be set up or ctx is done.
func Storage(ctx context.Context, c StorageConfig) (StorageReport, error) {
	rep := StorageReport{Classes: c.Classes}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Env == nil {
		c.Env = os.Environ()
	}
	if err := blkio.Available(); err != nil {
		return rep, err
	}
	devs := map[string]string{}
	for _, r := range c.Rows {
		if _, err := os.Stat(r.Path); err != nil {
			return rep, err
		}
		var err error
		if devs[r.ID], err = blkio.DeviceOf(r.Path); err != nil {
			return rep, err
		}
	}
	if !c.NoWarmup {
		if err := storageWarmup(ctx, c, devs); err != nil {
			return rep, err
		}
	}
	for _, cl := range c.Classes {
		g, err := blkio.NewGroup(fmt.Sprintf("faster-bench-%d-%s", os.Getpid(), cl.Name))
		if err != nil {
			return rep, err
		}
		for _, r := range c.Rows {
			for _, e := range c.Engines {
				if e.Rows != nil && !e.Rows[r.ID] {
					continue
				}
				if ctx.Err() != nil {
					g.Remove()
					return rep, ctx.Err()
				}
				rep.Cells = append(rep.Cells, storageCell(ctx, c, g, cl, r, devs[r.ID], e))
			}
		}
		if err := g.Remove(); err != nil {
			fmt.Fprintf(c.Log, "faster: %v\n", err)
		}
	}
	return rep, nil
}

// storageWarmup runs each engine once, unthrottled and discarded, on its
// first row, so its binary, interpreter and libraries are in the page
// cache and the throttle meets the data only.
func storageWarmup(ctx context.Context, c StorageConfig, devs map[string]string) error {
	g, err := blkio.NewGroup(fmt.Sprintf("faster-bench-%d-warmup", os.Getpid()))
	if err != nil {
		return err
	}
	defer g.Remove()
	for _, e := range c.Engines {
		for _, r := range c.Rows {
			if e.Rows == nil || e.Rows[r.ID] {
				fmt.Fprintf(c.Log, "faster: bench storage: warm-up run of %s on %s\n", e.Name, r.ID)
				storageCell(ctx, c, g, StorageClass{Name: "warmup"}, r, devs[r.ID], e)
				break
			}
		}
	}
	return nil
}

func storageCell(ctx context.Context, c StorageConfig, g *blkio.Group, cl StorageClass, r StorageRow, dev string, e StorageEngine) StorageCell {
	cell := StorageCell{Row: r.ID, Path: r.Path, Class: cl.Name, Engine: e.Name}
	fail := func(err error) StorageCell {
		cell.Error = err.Error()
		fmt.Fprintf(c.Log, "faster: bench storage: %s on %s (%s): %v\n", e.Name, r.ID, cl.Name, err)
		return cell
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
	repl := strings.NewReplacer("{faster}", shellQuote(c.Faster), "{path}", shellQuote(r.Path),
		"{flags}", strings.Join(quoteAll(r.Flags), " "), "{epochs}", strconv.Itoa(c.Epochs),
		"{workers}", strconv.Itoa(c.Workers), "{batch}", strconv.Itoa(c.Batch))
	cmd := g.Command(ctx, "/bin/sh", "-c", repl.Replace(e.Cmd))
	cmd.Env = c.Env
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
	cell.Seconds, cell.Images, cell.ImagesPerSec, cell.EngineVerdict = res.Seconds, res.Images, res.ImagesPerSec, res.Bottleneck
	if cell.Seconds <= 0 {
		cell.Seconds = wall
	}
	bytesRead, reads := after.ReadBytes-before.ReadBytes, after.Reads-before.Reads
	cell.DeviceMB, cell.DeviceReads = float64(bytesRead)/1e6, reads
	cell.DeviceMBPerSec = mbPerSec(bytesRead, cell.Seconds)
	cell.Throttled = saturated(cl.Limits, bytesRead, reads, cell.Seconds)
	cell.Verdict = cell.EngineVerdict
	if cell.Verdict == "" {
		cell.Verdict = "cpu"
		if cell.Throttled {
			cell.Verdict = "io"
		}
	}
	return cell
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

// lastJSON is the engine's summary: an engine may print progress lines
// before it; faster's own --json summary is one indented object, so it is
// taken from the last line that opens an object at column 0.
func lastJSON(out []byte) []byte {
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

// WriteStorageTable writes the report as a table: a line per row and
// class, a column per engine.
func WriteStorageTable(w io.Writer, rep StorageReport, rows []StorageRow, engines []StorageEngine) error {
	header := []string{"data", "storage"}
	for _, e := range engines {
		header = append(header, e.Name)
	}
	find := func(r, cl, e string) *StorageCell {
		for i := range rep.Cells {
			if c := &rep.Cells[i]; c.Row == r && c.Class == cl && c.Engine == e {
				return c
			}
		}
		return nil
	}
	var table [][]string
	for _, r := range rows {
		for _, cl := range rep.Classes {
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
	return Table(w, header, table)
}
