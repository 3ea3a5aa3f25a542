"""Single sign-on for the admin with OpenID Connect (issue 34, point 1; docs/operations.md, "Single
sign-on"). Off until ``OIDC_ISSUER`` is set.

mozilla-django-oidc runs the code flow (state, nonce, PKCE, the token request, the ID token's signature
checked against the provider's JWKS); this package gives it the provider's endpoints from its discovery
document (``discovery``), checks what the library leaves out, the ID token's audience and issuer, and
refuses an expired one with a reason (``backend``), and makes or updates the Django user the claims
name, with the roles the operator maps to the provider's groups (``roles``, ``accounts``).
"""
