"""Single sign-on with an OpenID Connect issuer (SPEC §24)."""
