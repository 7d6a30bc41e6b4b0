// The record builder moved to the runtime, which the poller shares with the local event source mapping.
export { type SqsEventRecordSource, sqsEventRecord } from '../../lambda/poller/sqs-event-record.ts';
