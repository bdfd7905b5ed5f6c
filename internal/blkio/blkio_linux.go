//go:build linux

package blkio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

const (
	v1Root = "/sys/fs/cgroup/blkio"
	v2Root = "/sys/fs/cgroup"
)

// Group is one throttled cgroup.
type Group struct {
	dir string
	v2  bool
}

// Available reports whether this process can create throttled groups, and
// why not (wrapping ErrUnavailable).
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: needs root", ErrUnavailable)
	}
	if _, err := os.Stat(filepath.Join(v1Root, "blkio.throttle.read_bps_device")); err == nil {
		return nil
	}
	if b, err := os.ReadFile(filepath.Join(v2Root, "cgroup.controllers")); err == nil && strings.Contains(" "+string(b)+" ", " io ") {
		return nil
	}
	return fmt.Errorf("%w: no cgroup v1 blkio controller at %s and no v2 io controller at %s", ErrUnavailable, v1Root, v2Root)
}

// NewGroup creates (or reuses) the group name.
func NewGroup(name string) (*Group, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if name == "" || strings.ContainsAny(name, "/.") {
		return nil, fmt.Errorf("blkio: group name %q", name)
	}
	g := &Group{dir: filepath.Join(v1Root, name)}
	if _, err := os.Stat(filepath.Join(v1Root, "blkio.throttle.read_bps_device")); err != nil {
		g.dir, g.v2 = filepath.Join(v2Root, name), true
		// The io controller must be enabled for the root's children.
		_ = os.WriteFile(filepath.Join(v2Root, "cgroup.subtree_control"), []byte("+io"), 0)
	}
	if err := os.Mkdir(g.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("blkio: %w", err)
	}
	return g, nil
}

// Dir returns the group's cgroup directory.
func (g *Group) Dir() string { return g.dir }

// Limit sets the group's read limits on dev ("major:minor", see DeviceOf);
// a zero field lifts that limit.
func (g *Group) Limit(dev string, l Limits) error {
	if l.ReadBPS < 0 || l.ReadIOPS < 0 {
		return fmt.Errorf("blkio: limits %+v", l)
	}
	if g.v2 {
		v := func(n int64) string {
			if n == 0 {
				return "max"
			}
			return strconv.FormatInt(n, 10)
		}
		return g.write("io.max", fmt.Sprintf("%s rbps=%s riops=%s", dev, v(l.ReadBPS), v(l.ReadIOPS)))
	}
	if err := g.write("blkio.throttle.read_bps_device", fmt.Sprintf("%s %d", dev, l.ReadBPS)); err != nil {
		return err
	}
	return g.write("blkio.throttle.read_iops_device", fmt.Sprintf("%s %d", dev, l.ReadIOPS))
}

func (g *Group) write(file, line string) error {
	if err := os.WriteFile(filepath.Join(g.dir, file), []byte(line+"\n"), 0); err != nil {
		return fmt.Errorf("blkio: %s: %q: %w", filepath.Join(g.dir, file), line, err)
	}
	return nil
}

// Command returns a command that runs name with args inside the group from
// its first instruction on, killed if ctx ends first.
func (g *Group) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	procs := filepath.Join(g.dir, "cgroup.procs")
	script := `echo $$ > "$0" && exec "$@"`
	return exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, procs, name}, args...)...)
}

// Stats returns the bytes and read requests the group's processes took
// from dev since the group was created (or since Reset, on v1).
func (g *Group) Stats(dev string) (Stats, error) {
	var st Stats
	if g.v2 {
		f, err := os.Open(filepath.Join(g.dir, "io.stat"))
		if err != nil {
			return st, fmt.Errorf("blkio: %w", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) == 0 || fs[0] != dev {
				continue
			}
			for _, kv := range fs[1:] {
				k, v, _ := strings.Cut(kv, "=")
				n, _ := strconv.ParseInt(v, 10, 64)
				switch k {
				case "rbytes":
					st.ReadBytes = n
				case "rios":
					st.Reads = n
				}
			}
		}
		return st, sc.Err()
	}
	read := func(file string) (int64, error) {
		b, err := os.ReadFile(filepath.Join(g.dir, file))
		if err != nil {
			return 0, fmt.Errorf("blkio: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			fs := strings.Fields(line)
			if len(fs) == 3 && fs[0] == dev && fs[1] == "Read" {
				return strconv.ParseInt(fs[2], 10, 64)
			}
		}
		return 0, nil
	}
	var err error
	if st.ReadBytes, err = read("blkio.throttle.io_service_bytes"); err != nil {
		return st, err
	}
	st.Reads, err = read("blkio.throttle.io_serviced")
	return st, err
}

// Remove lifts the limits and deletes the group; its processes must have
// exited.
func (g *Group) Remove() error {
	if err := os.Remove(g.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("blkio: %w", err)
	}
	return nil
}

// DeviceOf returns the "major:minor" of the whole disk that holds path (a
// partition's parent disk: the throttle applies to disks).
func DeviceOf(path string) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return "", fmt.Errorf("blkio: %w", &os.PathError{Op: "stat", Path: path, Err: err})
	}
	id := fmt.Sprintf("%d:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)))
	sys := filepath.Join("/sys/dev/block", id)
	if _, err := os.Stat(sys); err != nil {
		return "", fmt.Errorf("%w: %s is on device %s, which is not a block device (tmpfs, overlay or network file system?)", ErrUnavailable, path, id)
	}
	if _, err := os.Stat(filepath.Join(sys, "partition")); err == nil {
		b, err := os.ReadFile(filepath.Join(sys, "..", "dev"))
		if err != nil {
			return "", fmt.Errorf("blkio: parent disk of %s: %w", id, err)
		}
		id = strings.TrimSpace(string(b))
	}
	return id, nil
}

// Evict drops the page-cache pages of every regular file under path (a
// file or a tree; symbolic links are not followed), after writing back
// their dirty pages, so that the next reads of the dataset come from the
// device while the programs that read it (their binaries, libraries and
// interpreters) stay cached. It returns the bytes of the files evicted.
func Evict(path string) (int64, error) {
	var total int64
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fd := int(f.Fd())
		if err := unix.Fdatasync(fd); err != nil {
			return fmt.Errorf("blkio: evict %s: %w", p, err)
		}
		if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
			return fmt.Errorf("blkio: evict %s: %w", p, err)
		}
		if st, err := f.Stat(); err == nil {
			total += st.Size()
		}
		return nil
	})
	return total, err
}

// DropCaches writes back dirty pages and empties the page cache, so the
// next reads come from the device.
func DropCaches() error {
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
		return fmt.Errorf("blkio: drop caches: %w", err)
	}
	return nil
}
