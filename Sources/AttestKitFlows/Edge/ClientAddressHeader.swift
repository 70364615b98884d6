/// The one forwarding header whose addresses are believed from a trusted proxy (`http.client-address-header`): the
/// header the proxy in front of the service writes. The other is ignored, since a proxy that appends to one passes
/// the other through from the client unchanged.
///
/// nginx (`$proxy_add_x_forwarded_for`), HAProxy (`option forwardfor`), an AWS Application Load Balancer and Envoy
/// (`use_remote_address`) append to `X-Forwarded-For`; choose ``forwarded`` only for a proxy that appends RFC 7239
/// `Forwarded: for=` (HAProxy's `option forwarded`, Envoy with a header formatter, Traefik can be configured to).
public enum ClientAddressHeader: String, Sendable, Hashable, CaseIterable {
    /// `X-Forwarded-For`, the default: comma-separated addresses, origin first.
    case xForwardedFor = "x-forwarded-for"
    /// `Forwarded` (RFC 7239): the `for=` parameter of each element.
    case forwarded
}
