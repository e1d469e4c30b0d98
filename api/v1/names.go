package v1

// The strings the API's rules are about, as named types: each carries its
// schema and CEL rules once, and both versions use it (v1alpha1's fields
// are of these types too), as Gateway API's older versions alias its
// Hostname. Package validation holds the same rules in Go, for admission
// and the renderer; the CRD's rules keep the API safe while the webhook
// does not answer.

// Image is a container image reference.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=1024
// +kubebuilder:validation:XValidation:rule="!self.matches(r'[\\p{Z}\\p{Cc}]')",message="must not contain whitespace or control characters"
type Image string

// Hostname is a route's host: a lower-case DNS name, optionally starting
// with "*." and at least two labels, not an IP address.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:XValidation:rule="!isIP(self.startsWith('*.') ? self.substring(2) : self)",message="must be a DNS name, not an IP address"
// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self.startsWith('*.') ? self.substring(2) : self).hasValue()",message="must be a lower-case DNS name such as api.example.com, optionally starting with '*.'"
// +kubebuilder:validation:XValidation:rule="!self.matches('[^.]{64}')",message="each label (between dots) must be at most 63 characters"
// +kubebuilder:validation:XValidation:rule="!self.startsWith('*.') || self.substring(2).contains('.')",message="a wildcard must keep at least two labels after '*.', as in *.example.com: *.com would claim every name of a top-level domain"
type Hostname string

// HTTPPath is a request path a route matches: it starts with "/", holds
// only the path alphabet, no empty, "." or ".." segments, as written or
// once percent-decoded, and well-formed escapes of UTF-8.
// +kubebuilder:validation:MaxLength=1024
// +kubebuilder:validation:XValidation:rule="self.matches('^/[-A-Za-z0-9._~!&()*+,=:@%/]*$')",message="must start with '/' and hold only letters, digits and - . _ ~ / ! & ( ) * + , = : @ %"
// +kubebuilder:validation:XValidation:rule="!self.contains('//') && !self.contains('/./') && !self.contains('/../') && !self.endsWith('/.') && !self.endsWith('/..')",message="must not contain empty, '.' or '..' segments"
// +kubebuilder:validation:XValidation:rule="self.matches('^([^%]|%[0-7][0-9A-Fa-f]|%[Cc][2-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Dd][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Ee]0%[ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Ee][1-9A-Ca-cEeFf]%[89ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Ee][Dd]%[89][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Ff]0%[9ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Ff][1-3]%[89ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Ff]4%8[0-9A-Fa-f]%[89ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f])*$')",message="'%' must start a percent-encoded byte such as %C3%A9 ('%25' for a literal '%'), and the encoded bytes must spell UTF-8"
// +kubebuilder:validation:XValidation:rule="!self.matches('%([01][0-9A-Fa-f]|2[02347]|3[BbCcEeFf]|5[B-Eb-e]|60|7[B-Fb-f])')",message="must not percent-encode a control character, a space or a character the path may not hold as written"
// +kubebuilder:validation:XValidation:rule="!self.matches('%[Cc]2%([89][0-9A-Fa-f]|[Aa]0)|%[Ee]1%9[Aa]%80|%[Ee]2%80%(8[0-9Aa]|[Aa][89Ff])|%[Ee]2%81%9[Ff]|%[Ee]3%80%80')",message="must not percent-encode a control character or whitespace, such as %C2%85 or %E2%80%A8"
// +kubebuilder:validation:XValidation:rule="!self.matches('(/|%2[Ff])(/|%2[Ff])|(/|%2[Ff])([.]|%2[Ee]){1,2}(/|%2[Ff]|$)|%25(2|%32)([Ff]|%46|%66)')",message="must not contain empty, '.' or '..' segments once percent-decoded (%2F is '/', %2E is '.'), nor decode to '%2F'"
type HTTPPath string

// ServiceName is the name of a backend Service: a DNS-1035 label.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:XValidation:rule="!format.dns1035Label().validate(self).hasValue()",message="must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter, such as user-service"
type ServiceName string

// A named type states its bounds once for every field of it, as Gateway
// API's PortNumber does; package validation reads them from the CRD.

// PortNumber is a TCP port number, from 1 to 65535.
// +kubebuilder:validation:Minimum=1
// +kubebuilder:validation:Maximum=65535
type PortNumber int32
