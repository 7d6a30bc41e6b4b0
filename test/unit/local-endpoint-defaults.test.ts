import { describe, expect, it } from 'vitest';
import { describeMissingAwsSetup } from '../../lambda/aws/describe-missing-aws-setup.ts';
import { isLocalEndpoint, localEndpointDefaults } from '../../lambda/aws/local-endpoint-defaults.ts';

// A shared credentials file that does not exist: only the variables decide.
const NO_FILE = { AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials' };

describe('Function: isLocalEndpoint()', () => {
  it.each([
    'http://127.0.0.1:4566',
    'http://localhost:8000',
    'http://[::1]:9324',
    'https://sqs.localhost:4566',
    'http://localstack:4566',
  ])('treats %s as an emulator', (endpoint) => {
    expect(isLocalEndpoint(endpoint)).toBe(true);
  });

  it.each([
    undefined,
    '',
    'not a url',
    'https://sqs.eu-west-1.amazonaws.com',
    'http://sqs.eu-west-1.amazonaws.com',
    'https://dynamodb.eu-west-1.api.aws',
    'https://proxy.example.com',
  ])('never treats %s as an emulator', (endpoint) => {
    expect(isLocalEndpoint(endpoint)).toBe(false);
  });
});

describe('Function: localEndpointDefaults()', () => {
  it('gives a local endpoint a region and a fake key when neither is set', () => {
    expect(localEndpointDefaults('http://127.0.0.1:4566', { ...NO_FILE })).toEqual({
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  });

  it('never overrides the region or the credentials the user set', () => {
    expect(
      localEndpointDefaults('http://127.0.0.1:4566', {
        ...NO_FILE,
        AWS_REGION: 'eu-west-1',
        AWS_PROFILE: 'dev',
      }),
    ).toEqual({});
    expect(
      localEndpointDefaults('http://127.0.0.1:4566', {
        ...NO_FILE,
        AWS_DEFAULT_REGION: 'eu-west-1',
        AWS_ACCESS_KEY_ID: 'AKIA',
      }),
    ).toEqual({});
    // A shared credentials file is the user's choice too (this test file exists).
    expect(
      localEndpointDefaults('http://127.0.0.1:4566', { AWS_SHARED_CREDENTIALS_FILE: import.meta.filename }),
    ).toEqual({ region: 'us-east-1' });
  });

  it("gives AWS's endpoints (and no endpoint) nothing", () => {
    expect(localEndpointDefaults('https://sqs.eu-west-1.amazonaws.com', { ...NO_FILE })).toEqual({});
    expect(localEndpointDefaults(undefined, { ...NO_FILE })).toEqual({});
  });
});

describe('Function: describeMissingAwsSetup()', () => {
  it('names AWS_REGION for a missing region and the credential variables for missing credentials', () => {
    const credentials = Object.assign(new Error('Could not load credentials from any providers'), {
      name: 'CredentialsProviderError',
    });
    expect(describeMissingAwsSetup(new Error('Region is missing'), 'SQS')).toBe(
      'SQS has no AWS region: set AWS_REGION (e.g. AWS_REGION=eu-west-1), or give a profile with a region in AWS_PROFILE',
    );
    expect(describeMissingAwsSetup(credentials, 'SQS')).toBe(
      'SQS found no AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones)',
    );
    expect(describeMissingAwsSetup(new Error('AccessDenied'), 'SQS')).toBeUndefined();
  });
});
