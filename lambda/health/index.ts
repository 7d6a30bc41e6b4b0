/** The health job: figures read from the database, published as EMF by `lambda/handlers/health.ts`. */
export {
  type CollectHealthOptions,
  collectHealth,
  type HealthFigures,
  UNFINISHED_INBOX_STATUSES,
  type UnfinishedInboxStatus,
} from './collect-health.ts';
export { HEALTH_METRICS } from './health-metrics.ts';
export { publishHealth } from './publish-health.ts';
