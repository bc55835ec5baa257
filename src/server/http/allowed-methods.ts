/** A route as Hono lists it in `app.routes`. */
export interface RouteEntry {
  method: string;
  path: string;
}

/**
 * The methods each known path answers, worked out from the app's own route table, so a new
 * route needs no second entry anywhere. Middleware (`ALL`, `*`) is not a route. HEAD comes
 * with GET (Hono answers it with the GET handler).
 */
export function allowedMethods(routes: readonly RouteEntry[]): (path: string) => string[] {
  const patterns = new Map<string, { pattern: RegExp; methods: Set<string> }>();
  for (const route of routes) {
    if (route.method === 'ALL' || route.path.includes('*')) continue;
    let entry = patterns.get(route.path);
    if (!entry) {
      const source = route.path
        .split('/')
        .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
        .join('/');
      entry = { pattern: new RegExp(`^${source}$`), methods: new Set() };
      patterns.set(route.path, entry);
    }
    entry.methods.add(route.method);
    if (route.method === 'GET') entry.methods.add('HEAD');
  }
  const entries = [...patterns.values()];
  return (path) => {
    const methods = new Set<string>();
    for (const { pattern, methods: own } of entries) {
      if (pattern.test(path)) for (const method of own) methods.add(method);
    }
    return [...methods].sort();
  };
}
