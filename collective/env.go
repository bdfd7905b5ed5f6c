package collective

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

// DefaultAddr is the rendezvous address FromEnv uses when MASTER_ADDR is
// unset.
const DefaultAddr = "127.0.0.1"

// DefaultTimeout is the Timeout a zero Config.Timeout stands for.
const DefaultTimeout = 60 * time.Second

// FromEnv reads a rank's Config from the environment torchrun sets:
//
//	RANK                       this rank, 0 <= RANK < WORLD_SIZE (default 0)
//	WORLD_SIZE                 the number of ranks (default 1)
//	MASTER_ADDR                where the store is served (default 127.0.0.1)
//	MASTER_PORT                its port; required when WORLD_SIZE > 1
//	FASTER_COLLECTIVE_TIMEOUT  a Go duration such as "90s" (default 0: 60 s)
//	TORCHELASTIC_USE_AGENT_STORE  "True": the launcher serves the store
//	TORCHELASTIC_RESTART_COUNT    with it, the group's attempt (default 0)
//	LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK
//	                           the rank's place on its machine (default 0)
//
// Without RANK and WORLD_SIZE, Open MPI's and then Slurm's variables stand
// for them (see schedulerEnv for the mapping and the precedence).
//
// An error names the variable read and its bad value: a scheduler's
// variable when it stood for torchrun's. WORLD_SIZE is at most MaxSize,
// LOCAL_WORLD_SIZE at most WORLD_SIZE (or MaxSize without it).
func FromEnv() (Config, error) {
	return configFrom(os.LookupEnv)
}

// MaxSize is the largest group a Config may describe, from the
// environment or not: more ranks than any job has run, and far inside the
// C int Gloo takes (a WORLD_SIZE of 2^32+2 was 2 to it).
const MaxSize = 1 << 20

func configFrom(env func(string) (string, bool)) (Config, error) {
	lookup, err := schedulerEnv(env)
	if err != nil {
		return Config{}, err
	}
	c := Config{Size: 1, Addr: DefaultAddr}
	const unsetSize = "WORLD_SIZE (unset: 1)"
	sizeGiven := unsetSize
	if v, g, ok := lookup("WORLD_SIZE"); ok {
		if c.Size, err = strconv.Atoi(v); err != nil || c.Size < 1 {
			return Config{}, fmt.Errorf("collective: %s: want a positive integer", g)
		}
		if c.Size > MaxSize {
			return Config{}, fmt.Errorf("collective: %s: more than %d ranks", g, MaxSize)
		}
		sizeGiven = g
	}
	if v, g, ok := lookup("RANK"); ok {
		if c.Rank, err = strconv.Atoi(v); err != nil || c.Rank < 0 {
			return Config{}, fmt.Errorf("collective: %s: want a non-negative integer", g)
		}
		if c.Rank >= c.Size {
			return Config{}, fmt.Errorf("collective: %s: want less than %s", g, sizeGiven)
		}
	}
	if v, _, ok := lookup("MASTER_ADDR"); ok && v != "" {
		c.Addr = v
	}
	if v, g, ok := lookup("MASTER_PORT"); ok && v != "" {
		if c.Port, err = strconv.Atoi(v); err != nil || c.Port < 1 || c.Port > 65535 {
			return Config{}, fmt.Errorf("collective: %s: want a port number 1-65535", g)
		}
	} else if c.Size > 1 {
		return Config{}, fmt.Errorf("collective: MASTER_PORT is not set (required when %s > 1)", sizeGiven)
	}
	// torch compares with str(True); so do we.
	if v, _, _ := lookup("TORCHELASTIC_USE_AGENT_STORE"); v == "True" {
		c.AgentStore = true
		attempt := 0
		if v, g, ok := lookup("TORCHELASTIC_RESTART_COUNT"); ok && v != "" {
			if attempt, err = strconv.Atoi(v); err != nil || attempt < 0 {
				return Config{}, fmt.Errorf("collective: %s: want a non-negative integer", g)
			}
		}
		c.StorePrefix = "/worker/attempt_" + strconv.Itoa(attempt) + "/"
	}
	givens := map[string]string{}
	for _, f := range []struct {
		name string
		dst  *int
	}{{"LOCAL_RANK", &c.LocalRank}, {"LOCAL_WORLD_SIZE", &c.LocalSize}, {"GROUP_RANK", &c.GroupRank}} {
		if v, g, ok := lookup(f.name); ok && v != "" {
			if *f.dst, err = strconv.Atoi(v); err != nil || *f.dst < 0 {
				return Config{}, fmt.Errorf("collective: %s: want a non-negative integer", g)
			}
			givens[f.name] = g
		}
	}
	if c.LocalSize > 0 && c.LocalRank >= c.LocalSize {
		return Config{}, fmt.Errorf("collective: %s: want less than %s", givens["LOCAL_RANK"], givens["LOCAL_WORLD_SIZE"])
	}
	if c.LocalSize > MaxSize || (c.LocalSize > c.Size && sizeGiven != unsetSize) {
		return Config{}, fmt.Errorf("collective: %s: more ranks on this machine than in the group (%s)", givens["LOCAL_WORLD_SIZE"], sizeGiven)
	}
	if v, g, ok := lookup("FASTER_COLLECTIVE_TIMEOUT"); ok && v != "" {
		if c.Timeout, err = time.ParseDuration(v); err != nil || c.Timeout < 0 {
			return Config{}, fmt.Errorf("collective: %s: want a Go duration such as 90s", g)
		}
	}
	return c, nil
}

// Validate reports whether c describes a rank of a group.
func (c Config) Validate() error {
	switch {
	case c.Size < 1 || c.Size > MaxSize:
		return fmt.Errorf("collective: config: size %d: want 1 to %d", c.Size, MaxSize)
	case c.Rank < 0 || c.Rank >= c.Size:
		return fmt.Errorf("collective: config: rank %d: want 0 <= rank < size %d", c.Rank, c.Size)
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("collective: config: port %d out of range", c.Port)
	case c.Timeout < 0:
		return fmt.Errorf("collective: config: negative timeout %v", c.Timeout)
	}
	return nil
}

// StoreAddr is the host:port of the rendezvous store, Addr and Port joined.
func (c Config) StoreAddr() string {
	addr := c.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	return net.JoinHostPort(addr, strconv.Itoa(c.Port))
}

// EffectiveTimeout is c.Timeout, or DefaultTimeout when it is zero.
func (c Config) EffectiveTimeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return c.Timeout
}
