/** Who is calling, as the server established it; never taken from a request body. */
export interface Identity {
  name: string;
  roles: readonly string[];
  /** How the caller proved it: an API token, the trusted proxy's header, or an inbox sign-in. */
  via: 'token' | 'header' | 'cookie';
}

export function hasRole(identity: Identity, role: string): boolean {
  return identity.roles.includes(role);
}
