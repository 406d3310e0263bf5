// Package catalog reads the KWOK provider's instance-type catalogs (the
// format of INSTANCE_TYPES_FILE_PATH), for prices and shapes.
package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeprint/nodeprint/pkg/filecache"
	"github.com/nodeprint/nodeprint/pkg/strictyaml"
)

// Catalog is a set of instance types with their offerings.
type Catalog struct {
	// Digest is the SHA-256 of the file, recorded in fingerprints.
	Digest string
	Types  map[string]InstanceType
}

// InstanceType is one entry of the catalog.
type InstanceType struct {
	Name         string `json:"name"`
	Architecture string `json:"architecture"`
	// OperatingSystems is read and not used: the fit check assumes linux.
	OperatingSystems []string          `json:"operatingSystems,omitempty"`
	Resources        map[string]string `json:"resources"`
	Offerings        []Offering        `json:"offerings"`
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

// MaxFileSize bounds a catalog file (the KWOK provider's generic catalog
// is about 0.8 MB).
const MaxFileSize = 16 << 20

// Load reads a catalog file strictly: unknown fields, impossible prices
// and quantities are *strictyaml.FieldErrors naming the file and field.
// A loaded catalog is kept while its file is unchanged (every run reads
// its catalog; the generic one is 0.8 MB). Callers do not modify it.
func Load(path string) (*Catalog, error) { return loaded.Load(path, load) }

var loaded filecache.Cache[*Catalog]

func load(path string) (*Catalog, error) {
	b, err := strictyaml.ReadFile(path, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("failed to read catalog: %w", err)
	}
	var types []InstanceType
	if errs, _ := strictyaml.DecodeJSON(path, b, &types, "the format is the KWOK provider's INSTANCE_TYPES_FILE_PATH"); len(errs) > 0 {
		return nil, errs
	}
	if errs := validate(path, types); len(errs) > 0 {
		return nil, errs
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

func validate(path string, types []InstanceType) strictyaml.ErrorList {
	var errs strictyaml.ErrorList
	add := func(field, msg string, args ...any) {
		errs = append(errs, &strictyaml.FieldError{File: path, Path: field, Msg: fmt.Sprintf(msg, args...)})
	}
	if len(types) == 0 {
		add("", "no instance types")
	}
	for i, t := range types {
		at := fmt.Sprintf("[%d]", i)
		if t.Name == "" {
			add(at+".name", "an instance type needs a name")
		}
		for k, v := range t.Resources {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				add(at+".resources."+k, "%q is not a quantity", v)
			} else if q.Sign() < 0 {
				add(at+".resources."+k, "%q is negative", v)
			}
		}
		if len(t.Offerings) == 0 {
			add(at+".offerings", "%s has no offerings", t.Name)
		}
		for j, o := range t.Offerings {
			if o.Price < 0 || math.IsNaN(o.Price) || math.IsInf(o.Price, 0) {
				add(fmt.Sprintf("%s.offerings[%d].Price", at, j), "%v: a price is finite and not negative", o.Price)
			}
		}
	}
	return errs
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

// CPU is an instance type's vCPUs, and whether the catalog has them.
func (c *Catalog) CPU(instanceType string) (float64, bool) {
	t, ok := c.Types[instanceType]
	if !ok {
		return 0, false
	}
	q, err := resource.ParseQuantity(t.Resources["cpu"])
	if err != nil || q.IsZero() {
		return 0, false
	}
	return q.AsApproximateFloat64(), true
}
