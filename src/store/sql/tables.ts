export interface Tables {
  sessions: string;
  messages: string;
  approvals: string;
  executions: string;
  audit: string;
  auditHead: string;
  state: string;
  rules: string;
  deliveries: string;
  webSessions: string;
}

/** The store's table names, each passed through `qualify` (PostgreSQL prefixes its schema). */
export function tableNames(qualify: (table: string) => string = (table) => table): Tables {
  return {
    sessions: qualify('sessions'),
    messages: qualify('messages'),
    approvals: qualify('approvals'),
    executions: qualify('executions'),
    audit: qualify('audit'),
    auditHead: qualify('audit_head'),
    state: qualify('state'),
    rules: qualify('rules'),
    deliveries: qualify('deliveries'),
    webSessions: qualify('web_sessions'),
  };
}
