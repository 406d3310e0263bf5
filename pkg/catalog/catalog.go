// Package catalog reads the KWOK provider's instance-type catalogs (the
// format of INSTANCE_TYPES_FILE_PATH), for prices and shapes.
package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
)

// Catalog is a set of instance types with their offerings.
type Catalog struct {
	// Digest is the SHA-256 of the file, recorded in fingerprints.
	Digest string
	Types  map[string]InstanceType
}

// InstanceType is one entry of the catalog.
type InstanceType struct {
	Name         string            `json:"name"`
	Architecture string            `json:"architecture"`
	Resources    map[string]string `json:"resources"`
	Offerings    []Offering        `json:"offerings"`
}

// Offering is one (zone, capacity type) of an instance type.
type Offering struct {
	Price        float64       `json:"Price"`
	Available    bool          `json:"Available"`
	Requirements []requirement `json:"Requirements"`
}

type requirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values"`
}

func (o Offering) value(key string) string {
	for _, r := range o.Requirements {
		if r.Key == key && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}

// Zone and CapacityType of the offering.
func (o Offering) Zone() string         { return o.value("topology.kubernetes.io/zone") }
func (o Offering) CapacityType() string { return o.value("karpenter.sh/capacity-type") }

// Load reads a catalog file.
func Load(path string) (*Catalog, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read catalog: %w", err)
	}
	var types []InstanceType
	if err := json.Unmarshal(b, &types); err != nil {
		return nil, fmt.Errorf("failed to parse catalog %s: %w", path, err)
	}
	sum := sha256.Sum256(b)
	c := &Catalog{Digest: hex.EncodeToString(sum[:]), Types: map[string]InstanceType{}}
	for _, t := range types {
		// AWS-shaped catalogs list a type once per operating system; the
		// offerings and prices are the same.
		if _, dup := c.Types[t.Name]; !dup {
			c.Types[t.Name] = t
		}
	}
	return c, nil
}

// Price is the hourly price of an offering, and whether the catalog has it.
func (c *Catalog) Price(instanceType, zone, capacityType string) (float64, bool) {
	t, ok := c.Types[instanceType]
	if !ok {
		return 0, false
	}
	for _, o := range t.Offerings {
		if o.Zone() == zone && o.CapacityType() == capacityType {
			return o.Price, true
		}
	}
	return 0, false
}
