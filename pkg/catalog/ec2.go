package catalog

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/strictyaml"
)

// EC2 is what `nodeprint catalog from-ec2` converts: the output of `aws
// ec2 describe-instance-types` (the fields a KWOK catalog needs), a price
// file, and optionally `aws ec2 describe-instance-type-offerings
// --location-type availability-zone` for which zones offer which type.
type EC2 struct {
	Types     []EC2InstanceType
	Prices    *Prices
	Offerings map[string][]string // instance type -> zones
}

// EC2InstanceType is one entry of describe-instance-types, the fields read.
type EC2InstanceType struct {
	InstanceType  string `json:"InstanceType"`
	ProcessorInfo struct {
		SupportedArchitectures []string `json:"SupportedArchitectures"`
	} `json:"ProcessorInfo"`
	VCpuInfo struct {
		DefaultVCpus int `json:"DefaultVCpus"`
	} `json:"VCpuInfo"`
	MemoryInfo struct {
		SizeInMiB int64 `json:"SizeInMiB"`
	} `json:"MemoryInfo"`
	NetworkInfo struct {
		MaximumNetworkInterfaces  int `json:"MaximumNetworkInterfaces"`
		Ipv4AddressesPerInterface int `json:"Ipv4AddressesPerInterface"`
	} `json:"NetworkInfo"`
	GpuInfo *struct {
		Gpus []struct {
			Count        int    `json:"Count"`
			Manufacturer string `json:"Manufacturer"`
		} `json:"Gpus"`
	} `json:"GpuInfo,omitempty"`
	SupportedUsageClasses []string `json:"SupportedUsageClasses"`
}

// Prices is the price file (docs/scenarios.md: a catalog of your own):
// the region's zones, and per instance type the on-demand price and the
// spot price, either one for every zone or per zone. Prices are USD per
// hour.
type Prices struct {
	Region string           `json:"region"`
	Zones  []string         `json:"zones"`
	Types  map[string]Price `json:"prices"`
}

// Price is one instance type's prices.
type Price struct {
	OnDemand *float64 `json:"on-demand,omitempty"`
	// Spot is a number (every zone) or a map of zone to price.
	Spot SpotPrice `json:"spot,omitempty"`
}

// SpotPrice is one spot price for every zone, or one per zone.
type SpotPrice struct {
	All    *float64
	ByZone map[string]float64
}

// UnmarshalJSON accepts a number or a map of zone to number.
func (s *SpotPrice) UnmarshalJSON(b []byte) error {
	var n float64
	if err := json.Unmarshal(b, &n); err == nil {
		s.All = &n
		return nil
	}
	m := map[string]float64{}
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("spot: want a price or a map of zone to price, such as {us-west-2a: 0.035}")
	}
	s.ByZone = m
	return nil
}

// in is the spot price in zone, if there is one.
func (s SpotPrice) in(zone string) (float64, bool) {
	if s.All != nil {
		return *s.All, true
	}
	p, ok := s.ByZone[zone]
	return p, ok
}

// ParseDescribeInstanceTypes reads describe-instance-types output (one
// page, or the pages concatenated into one InstanceTypes list).
func ParseDescribeInstanceTypes(path string, b []byte) ([]EC2InstanceType, error) {
	var out struct {
		InstanceTypes []EC2InstanceType `json:"InstanceTypes"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, &strictyaml.FieldError{File: path, Msg: fmt.Sprintf("not the JSON of `aws ec2 describe-instance-types`: %v", err)}
	}
	if len(out.InstanceTypes) == 0 {
		return nil, &strictyaml.FieldError{File: path, Path: "InstanceTypes", Msg: "no instance types (is it `aws ec2 describe-instance-types --output json`?)"}
	}
	return out.InstanceTypes, nil
}

// ParseOfferings reads describe-instance-type-offerings --location-type
// availability-zone output: which zones offer each type.
func ParseOfferings(path string, b []byte) (map[string][]string, error) {
	var out struct {
		InstanceTypeOfferings []struct {
			InstanceType string `json:"InstanceType"`
			LocationType string `json:"LocationType"`
			Location     string `json:"Location"`
		} `json:"InstanceTypeOfferings"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, &strictyaml.FieldError{File: path, Msg: fmt.Sprintf("not the JSON of `aws ec2 describe-instance-type-offerings`: %v", err)}
	}
	zones := map[string][]string{}
	for i, o := range out.InstanceTypeOfferings {
		if o.LocationType != "availability-zone" {
			return nil, &strictyaml.FieldError{File: path, Path: fmt.Sprintf("InstanceTypeOfferings[%d].LocationType", i),
				Msg: fmt.Sprintf("%q: run it with --location-type availability-zone", o.LocationType)}
		}
		zones[o.InstanceType] = append(zones[o.InstanceType], o.Location)
	}
	return zones, nil
}

// ParsePrices reads the price file strictly.
func ParsePrices(path string, b []byte) (*Prices, error) {
	p := &Prices{}
	if errs, _ := strictyaml.Decode(path, b, p, "the price file has region, zones and prices (docs/scenarios.md)"); len(errs) > 0 {
		return nil, errs
	}
	var errs strictyaml.ErrorList
	add := func(field, msg string, args ...any) {
		errs = append(errs, &strictyaml.FieldError{File: path, Path: field, Msg: fmt.Sprintf(msg, args...)})
	}
	if len(p.Zones) == 0 {
		add("zones", "list the zones to offer the types in, such as [us-west-2a, us-west-2b]")
	}
	for name, pr := range p.Types {
		if pr.OnDemand != nil && *pr.OnDemand < 0 {
			add("prices."+name+".on-demand", "%v is negative", *pr.OnDemand)
		}
		if pr.OnDemand == nil && pr.Spot.All == nil && pr.Spot.ByZone == nil {
			add("prices."+name, "give an on-demand or a spot price")
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

// Convert makes a KWOK catalog of the types that have a price, with their
// architecture (x86_64 as amd64, as Karpenter's AWS provider labels it),
// vCPUs, memory, GPUs and the pods the AWS VPC CNI allows (ENIs × (IPv4
// addresses per ENI − 1) + 2); an offering per zone and capacity type with
// a price. notes list what was left out and why.
func (e *EC2) Convert() (types []InstanceType, notes []string) {
	for _, t := range e.Types {
		it, why := e.convert(t)
		if why != "" {
			notes = append(notes, t.InstanceType+": "+why)
			continue
		}
		types = append(types, it)
	}
	sort.Slice(types, func(i, j int) bool { return types[i].Name < types[j].Name })
	sort.Strings(notes)
	return types, notes
}

var arch = map[string]string{"x86_64": "amd64", "arm64": "arm64"}

func (e *EC2) convert(t EC2InstanceType) (InstanceType, string) {
	price, ok := e.Prices.Types[t.InstanceType]
	if !ok {
		return InstanceType{}, "no price in the price file"
	}
	a := ""
	for _, s := range t.ProcessorInfo.SupportedArchitectures {
		if v, ok := arch[s]; ok {
			a = v
			break
		}
	}
	if a == "" {
		return InstanceType{}, fmt.Sprintf("architecture %v is not one Kubernetes nodes run", t.ProcessorInfo.SupportedArchitectures)
	}
	res := map[string]string{
		"cpu":               strconv.Itoa(t.VCpuInfo.DefaultVCpus),
		"memory":            fmt.Sprintf("%dMi", t.MemoryInfo.SizeInMiB),
		"ephemeral-storage": "20Gi",
		"pods":              strconv.Itoa(maxPods(t)),
	}
	if g := t.GpuInfo; g != nil {
		n := 0
		for _, gpu := range g.Gpus {
			if gpu.Manufacturer == "NVIDIA" {
				n += gpu.Count
			}
		}
		if n > 0 {
			res["nvidia.com/gpu"] = strconv.Itoa(n)
		}
	}
	offerings := e.offerings(t, price)
	if len(offerings) == 0 {
		return InstanceType{}, "no zone and capacity type with a price"
	}
	return InstanceType{Name: t.InstanceType, Architecture: a, OperatingSystems: []string{"linux"}, Resources: res, Offerings: offerings}, ""
}

// maxPods is the AWS VPC CNI's limit without prefix delegation.
func maxPods(t EC2InstanceType) int {
	n := t.NetworkInfo.MaximumNetworkInterfaces*(t.NetworkInfo.Ipv4AddressesPerInterface-1) + 2
	if n < 2 {
		return 110
	}
	return n
}

func (e *EC2) offerings(t EC2InstanceType, p Price) []Offering {
	zones := e.Prices.Zones
	if z, ok := e.Offerings[t.InstanceType]; ok && e.Offerings != nil {
		zones = intersect(zones, z)
	} else if e.Offerings != nil {
		zones = nil // the region offers the type in no zone
	}
	classes := map[string]bool{}
	for _, c := range t.SupportedUsageClasses {
		classes[c] = true
	}
	var out []Offering
	for _, z := range zones {
		if classes["on-demand"] && p.OnDemand != nil {
			out = append(out, offering(z, "on-demand", *p.OnDemand))
		}
		if sp, ok := p.Spot.in(z); ok && classes["spot"] {
			out = append(out, offering(z, "spot", sp))
		}
	}
	return out
}

func offering(zone, capacityType string, price float64) Offering {
	return Offering{Price: price, Available: true, Requirements: []requirement{
		{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{capacityType}},
		{Key: "topology.kubernetes.io/zone", Operator: "In", Values: []string{zone}},
	}}
}

func intersect(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if in[x] {
			out = append(out, x)
		}
	}
	return out
}

// FromEC2Files reads the three inputs of `nodeprint catalog from-ec2`
// (offeringsPath may be empty) and returns the catalog as the KWOK
// provider reads it (INSTANCE_TYPES_FILE_PATH) and what was left out.
// region, when set, must be the price file's and every zone's.
func FromEC2Files(typesPath, pricesPath, offeringsPath, region string) ([]byte, []string, error) {
	read := func(path string) ([]byte, error) { return strictyaml.ReadFile(path, MaxFileSize) }
	b, err := read(typesPath)
	if err != nil {
		return nil, nil, err
	}
	e := &EC2{}
	if e.Types, err = ParseDescribeInstanceTypes(typesPath, b); err != nil {
		return nil, nil, err
	}
	if b, err = read(pricesPath); err != nil {
		return nil, nil, err
	}
	if e.Prices, err = ParsePrices(pricesPath, b); err != nil {
		return nil, nil, err
	}
	if err := checkRegion(pricesPath, e.Prices, region); err != nil {
		return nil, nil, err
	}
	if offeringsPath != "" {
		if b, err = read(offeringsPath); err != nil {
			return nil, nil, err
		}
		if e.Offerings, err = ParseOfferings(offeringsPath, b); err != nil {
			return nil, nil, err
		}
	}
	types, notes := e.Convert()
	if len(types) == 0 {
		return nil, notes, &strictyaml.FieldError{File: pricesPath, Path: "prices", Msg: "no instance type of " + typesPath + " has a price here: the catalog would be empty"}
	}
	out, err := json.MarshalIndent(types, "", "  ")
	return append(out, '\n'), notes, err
}

// checkRegion refuses zones of another region than the price file's (or
// the one asked for).
func checkRegion(path string, p *Prices, region string) error {
	if region != "" && p.Region != "" && region != p.Region {
		return &strictyaml.FieldError{File: path, Path: "region", Msg: fmt.Sprintf("%q, but --region %s was asked for", p.Region, region)}
	}
	if region == "" {
		region = p.Region
	}
	for i, z := range p.Zones {
		if region != "" && (len(z) <= len(region) || !strings.HasPrefix(z, region)) {
			return &strictyaml.FieldError{File: path, Path: fmt.Sprintf("zones[%d]", i), Msg: fmt.Sprintf("%q is not a zone of region %s", z, region)}
		}
	}
	return nil
}
