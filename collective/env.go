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
// An error names the variable and its bad value.
func FromEnv() (Config, error) {
	return configFrom(os.LookupEnv)
}

func configFrom(lookup func(string) (string, bool)) (Config, error) {
	lookup, err := schedulerEnv(lookup)
	if err != nil {
		return Config{}, err
	}
	c := Config{Size: 1, Addr: DefaultAddr}
	if v, ok := lookup("WORLD_SIZE"); ok {
		if c.Size, err = strconv.Atoi(v); err != nil || c.Size < 1 {
			return Config{}, fmt.Errorf("collective: WORLD_SIZE=%q: want a positive integer", v)
		}
	}
	if v, ok := lookup("RANK"); ok {
		if c.Rank, err = strconv.Atoi(v); err != nil || c.Rank < 0 {
			return Config{}, fmt.Errorf("collective: RANK=%q: want a non-negative integer", v)
		}
		if c.Rank >= c.Size {
			return Config{}, fmt.Errorf("collective: RANK=%q: want less than WORLD_SIZE=%d", v, c.Size)
		}
	}
	if v, ok := lookup("MASTER_ADDR"); ok && v != "" {
		c.Addr = v
	}
	if v, ok := lookup("MASTER_PORT"); ok && v != "" {
		if c.Port, err = strconv.Atoi(v); err != nil || c.Port < 1 || c.Port > 65535 {
			return Config{}, fmt.Errorf("collective: MASTER_PORT=%q: want a port number 1-65535", v)
		}
	} else if c.Size > 1 {
		return Config{}, fmt.Errorf("collective: MASTER_PORT is not set (required when WORLD_SIZE=%d > 1)", c.Size)
	}
	// torch compares with str(True); so do we.
	if v, _ := lookup("TORCHELASTIC_USE_AGENT_STORE"); v == "True" {
		c.AgentStore = true
		attempt := 0
		if v, ok := lookup("TORCHELASTIC_RESTART_COUNT"); ok && v != "" {
			if attempt, err = strconv.Atoi(v); err != nil || attempt < 0 {
				return Config{}, fmt.Errorf("collective: TORCHELASTIC_RESTART_COUNT=%q: want a non-negative integer", v)
			}
		}
		c.StorePrefix = "/worker/attempt_" + strconv.Itoa(attempt) + "/"
	}
	for _, f := range []struct {
		name string
		dst  *int
	}{{"LOCAL_RANK", &c.LocalRank}, {"LOCAL_WORLD_SIZE", &c.LocalSize}, {"GROUP_RANK", &c.GroupRank}} {
		if v, ok := lookup(f.name); ok && v != "" {
			if *f.dst, err = strconv.Atoi(v); err != nil || *f.dst < 0 {
				return Config{}, fmt.Errorf("collective: %s=%q: want a non-negative integer", f.name, v)
			}
		}
	}
	if c.LocalSize > 0 && c.LocalRank >= c.LocalSize {
		return Config{}, fmt.Errorf("collective: LOCAL_RANK=%d: want less than LOCAL_WORLD_SIZE=%d", c.LocalRank, c.LocalSize)
	}
	if v, ok := lookup("FASTER_COLLECTIVE_TIMEOUT"); ok && v != "" {
		if c.Timeout, err = time.ParseDuration(v); err != nil || c.Timeout < 0 {
			return Config{}, fmt.Errorf("collective: FASTER_COLLECTIVE_TIMEOUT=%q: want a Go duration such as 90s", v)
		}
	}
	return c, nil
}

// Validate reports whether c describes a rank of a group.
func (c Config) Validate() error {
	switch {
	case c.Size < 1:
		return fmt.Errorf("collective: config: size %d: want at least 1", c.Size)
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
