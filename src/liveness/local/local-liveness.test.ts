import { livenessCases } from '../conformance/liveness-cases.ts';
import { localLiveness } from './local-liveness.ts';

livenessCases('local', { open: async () => localLiveness, crossHost: false });
